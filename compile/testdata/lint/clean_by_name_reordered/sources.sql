-- Sources for the plan = apply test (run/plan_apply_test.go).
CREATE TABLE events (event_date date, page text);
INSERT INTO events SELECT current_date - i % 5, 'page ' || i % 7 FROM generate_series(1, 300) i;

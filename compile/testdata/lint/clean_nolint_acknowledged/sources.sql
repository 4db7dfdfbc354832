-- Sources for the plan = apply test (run/plan_apply_test.go).
CREATE TABLE dim (k int, name text);
CREATE TABLE fact (date date, k int);
INSERT INTO dim SELECT i, 'name ' || i FROM generate_series(1, 40) i;
INSERT INTO fact SELECT current_date - i % 10, 1 + i % 40 FROM generate_series(1, 500) i;

CREATE TABLE orders (order_id bigint, date date, region text);
INSERT INTO orders SELECT g, current_date - (g % 10), CASE g % 2 WHEN 0 THEN 'eu' ELSE 'us' END FROM generate_series(1, 200) g;
CREATE TABLE events (day date, n bigint);
INSERT INTO events SELECT d::date, 1 FROM generate_series(DATE '2025-12-20', DATE '2026-07-10', interval '1 day') d;

-- Sources for the plan = apply test (run/plan_apply_test.go).
CREATE TABLE src (d date, n integer, x double precision, s varchar(20), b boolean, ts timestamptz);
INSERT INTO src SELECT DATE '2026-01-01' + i % 20, i, i / 10.0, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, i % 3 > 0, TIMESTAMPTZ '2026-01-02 00:00Z' + i * interval '1 hour'
FROM generate_series(1, 200) i;

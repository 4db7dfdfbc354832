-- Sources for the plan = apply test (run/plan_apply_test.go).
CREATE TABLE x (d date, a bigint);
CREATE TABLE y (d date);
CREATE TABLE z (d date, b bigint);
INSERT INTO x SELECT DATE '2026-01-01' + i, i FROM generate_series(0, 30) i;
INSERT INTO y SELECT DATE '2026-01-01' + i FROM generate_series(0, 30, 2) i;
INSERT INTO z SELECT DATE '2026-01-01' + i, 10 * i FROM generate_series(0, 30, 3) i;

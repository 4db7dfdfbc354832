-- A column declared twice would be a spec with a duplicate key (RW105).
CREATE STREAMING TABLE t (d DATE, x BIGINT, d DATE)
FLOW REPLACE WHERE d >= '2024-01-01' BY NAME
SELECT d, x FROM src;

-- Spark keeps the backslash of \% and \_ (LIKE reads them as a literal %
-- and _): 'x\%' is no prefix pattern.
CREATE STREAMING TABLE t (d DATE, name STRING)
FLOW REPLACE WHERE d >= '2024-01-01' AND name LIKE 'x\%'
BY NAME SELECT d, name FROM src;

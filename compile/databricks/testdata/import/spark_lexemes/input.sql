-- Spark SQL's lexemes as Databricks reads them: block comments nest (the
-- OR TRUE is commented out), a doubled quote ends one string and starts the
-- next, which Spark concatenates ('a''b' is 'ab'), \u0061 is a, R'…' has no
-- escapes.
CREATE STREAMING TABLE t (d DATE, region STRING, path STRING, quote STRING)
FLOW REPLACE WHERE d >= '2024-01-01' /* /* */ OR TRUE --*/
  AND region = 'a''b' AND region <> '\u0061sia' AND path = R'C:\'
BY NAME SELECT d, region, path, 'it''s' AS quote FROM src;

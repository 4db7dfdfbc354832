-- a materialized view and DML only
CREATE OR REFRESH MATERIALIZED VIEW mv AS SELECT 1 AS x;
INSERT INTO t SELECT * FROM legacy;

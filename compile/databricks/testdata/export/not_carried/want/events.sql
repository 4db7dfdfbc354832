-- Exported by rwc export from pipelines/events.yaml (pipeline events).

-- rwc: not carried (pipelines/events.yaml:10:15): column device's type uuid becomes STRING on Databricks
-- rwc: not carried (pipelines/events.yaml:12:14): column total's type numeric becomes DECIMAL(38,18) on Databricks
-- rwc: not carried (pipelines/events.yaml:17:14): DISTINCT ON is PostgreSQL's: Spark SQL has none
-- rwc: not carried (pipelines/events.yaml:19:18): the regular expression operator !~ is PostgreSQL's
-- rwc: not carried (pipelines/events.yaml:19:22): an E'…' string is PostgreSQL's
-- rwc: not carried (pipelines/events.yaml:5:19): partition_by is not carried
-- rwc: not carried (pipelines/events.yaml:15:9): index on (kind) is not carried
CREATE OR REFRESH STREAMING TABLE events_daily (
  day DATE,
  kind STRING,
  name STRING,
  device STRING,
  score DOUBLE,
  total DECIMAL(38,18),
  seen TIMESTAMP
)
FLOW REPLACE WHERE day >= date_add(current_date(), -3) AND kind IN ('click', 'view') AND (NOT startswith(name, 'test') AND score > 0.5E0) BY NAME
SELECT DISTINCT ON (day, kind, name) day, kind, name, device, score, total, seen
FROM `Event Log`
WHERE name !~ '^tmp\\d'
ORDER BY day, kind, name, seen DESC;

-- rwc: not carried (pipelines/events.yaml:28:17): partitioning interval month is not carried
CREATE OR REFRESH STREAMING TABLE monthly (
  month DATE,
  n BIGINT
)
PARTITIONED BY (month)
FLOW REPLACE WHERE month >= DATE'2026-01-01' BY NAME
SELECT date_trunc('month', day)::date AS month, count(*) AS n FROM events_daily GROUP BY 1;

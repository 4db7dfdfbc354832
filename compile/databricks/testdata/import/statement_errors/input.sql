-- Every table needs its flow; every flow its table.
CREATE STREAMING TABLE lonely (d DATE);

CREATE FLOW orphan_flow AS
INSERT INTO nowhere BY NAME REPLACE WHERE d >= current_date()
SELECT d FROM src;

CREATE STREAMING TABLE main.analytics.kpis (d DATE, n BIGINT, label STRING)
TBLPROPERTIES ('pipelines.reset.allowed' = 'maybe', 'delta.appendOnly' = 'true');

CREATE FLOW kpis_flow AS
INSERT INTO main.analytics.kpis BY NAME REPLACE WHERE d >= date_add(current_date(), -3)
SELECT d, count(*) AS n, date_format(d, 'yyyy-MM') AS label FROM events GROUP BY ALL;

CREATE STREAMING TABLE typo (d DATE)
FLOW REPLACE WHERE d >= >= DATE'2024-01-01' BY NAME
SELECT d FROM src;

CREATE STREAMING TABLE broken (d DATE)
FLOW REPLACE WHERE d >= 'unterminated BY NAME
SELECT d FROM src;
;

-- Exported by rwc export from pipelines/lexemes.yaml (pipeline lexemes).

-- rwc: not carried (pipelines/lexemes.yaml:18:10): an E'…' string is PostgreSQL's
CREATE OR REFRESH STREAMING TABLE lexemes (
  day DATE,
  path STRING,
  dash STRING,
  quote STRING,
  dollar STRING,
  esc STRING
)
FLOW REPLACE WHERE day >= DATE'2024-01-01' BY NAME
SELECT `s\`.day, 'C:\\' AS path, ' -- ' AS dash, 'it\'s' AS quote, /* a /* nested */ ' */ 'x\'y' AS dollar,
  'tab\there\'' AS esc
FROM src AS `s\`;

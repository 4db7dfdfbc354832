-- A quoted name that is no rwc name would be a path (the backfill file is
-- named after its table) and a spec that does not lint.
CREATE STREAMING TABLE `../../../evil` (d DATE, x BIGINT)
FLOW REPLACE WHERE d >= '2024-01-01' BY NAME
SELECT d, x FROM src;
REFRESH STREAMING TABLE `../../../evil` WHERE d >= '2020-01-01';

CREATE STREAMING TABLE `My Schema`.ok (`Bad Col` DATE, `x
y: 1` BIGINT)
FLOW REPLACE WHERE `Bad Col` >= '2024-01-01' BY NAME
SELECT 1;

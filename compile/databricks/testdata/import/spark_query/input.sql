CREATE OR REFRESH STREAMING TABLE `daily_kpis` (
  `day` DATE,
  region STRING,
  orders LONG,
  big_orders BIGINT,
  label STRING
)
COMMENT 'KPIs per day'
FLOW REPLACE WHERE `day` BETWEEN date_sub(current_date(), 7) AND current_date() AND region IN ("emea", 'asia') BY NAME
SELECT
  date_add(o.`date`, 0) AS `day`,
  o.region,
  count(*) AS orders,
  count_if(o.amount > 100) AS big_orders,
  nvl(cast(o.channel AS STRING), "n/a") AS label -- Spark's double-quoted string
FROM orders_fct o
WHERE o.`date` >= date_sub(current_date(), 30)
GROUP BY ALL;

CREATE STREAMING TABLE sales_daily (date DATE, region STRING, revenue DECIMAL(14,2))
FLOW REPLACE WHERE date >= date_add(current_date(), -3) BY NAME
SELECT date, region, sum(amount) AS revenue FROM sales_raw GROUP BY date, region;

CREATE STREAMING TABLE sampled (date DATE)
FLOW REPLACE WHERE rand() < 0.1 BY NAME
SELECT date FROM sales_raw;

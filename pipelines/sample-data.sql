-- Sample sources for the example pipelines: a few hundred thousand rows,
-- dates relative to today. Idempotent: run it again to start over.
DROP TABLE IF EXISTS orders_fct, product_dim, sales_raw, store_sales, store_dim, clickstream_events;
SELECT setseed(0.42);

CREATE TABLE product_dim (product_id int PRIMARY KEY, product_name text NOT NULL);
INSERT INTO product_dim SELECT i, 'product ' || i FROM generate_series(1, 200) i;

CREATE TABLE orders_fct (
  order_id bigint PRIMARY KEY, date date NOT NULL, region text NOT NULL,
  product_id int NOT NULL, qty int NOT NULL, price numeric(10,2) NOT NULL);
INSERT INTO orders_fct
SELECT i, current_date - (i % 60), (ARRAY['emea','amer','apac','asia'])[1 + i % 4],
       1 + (i * 7) % 200, 1 + i % 5, round((5 + random() * 95)::numeric, 2)
FROM generate_series(1, 120000) i;
CREATE INDEX ON orders_fct (date);

-- sales_raw keeps 30 days: older rows are deleted upstream.
CREATE TABLE sales_raw (date date NOT NULL, region text NOT NULL, amount numeric(12,2) NOT NULL);
INSERT INTO sales_raw
SELECT current_date - (i % 30), (ARRAY['emea','amer','apac'])[1 + (i / 30) % 3], round((random() * 200)::numeric, 2)
FROM generate_series(1, 90000) i;
CREATE INDEX ON sales_raw (date);

CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text NOT NULL, city text NOT NULL);
INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['Berlin','Jakarta','Seoul','Lisbon'])[1 + i % 4] FROM generate_series(1, 40) i;
CREATE TABLE store_sales (sale_id bigint PRIMARY KEY, sale_date date NOT NULL, store_id int NOT NULL, amount numeric(12,2) NOT NULL);
INSERT INTO store_sales
SELECT i, current_date - (i % 90), 1 + i % 40, round((random() * 80)::numeric, 2)
FROM generate_series(1, 100000) i;
CREATE INDEX ON store_sales (sale_date);

CREATE TABLE clickstream_events (event_id bigint PRIMARY KEY, event_date date NOT NULL, page text NOT NULL, session_id bigint NOT NULL);
INSERT INTO clickstream_events
SELECT i, current_date - (i % 45), (ARRAY['/','/search','/cart','/checkout','/help'])[1 + (i / 45) % 5], i / 7
FROM generate_series(1, 150000) i;
CREATE INDEX ON clickstream_events (event_date);
ANALYZE;

CREATE STREAMING TABLE orders_enriched (
  order_id BIGINT NOT NULL,
  date DATE NOT NULL,
  region STRING,
  product_name STRING,
  qty INT,
  price DECIMAL(10,2),
  CONSTRAINT orders_pk PRIMARY KEY (date, order_id)
)
FLOW REPLACE WHERE date >= date_add(current_date(), -7) BY NAME
SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price
FROM orders_fct o
JOIN product_dim p ON o.product_id = p.product_id;

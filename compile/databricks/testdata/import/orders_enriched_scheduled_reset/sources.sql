CREATE TABLE orders_fct (order_id bigint PRIMARY KEY, date date NOT NULL, region text, product_id int, qty integer, price numeric(10,2));
CREATE TABLE product_dim (product_id int PRIMARY KEY, product_name text);

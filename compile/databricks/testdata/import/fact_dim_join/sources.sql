CREATE TABLE fact_table (date date, user_id bigint, revenue numeric(12,2));
CREATE TABLE dim_users (user_id bigint PRIMARY KEY, region text);

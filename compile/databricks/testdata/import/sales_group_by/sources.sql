CREATE TABLE sales (date date, region text, amount numeric(12,2));

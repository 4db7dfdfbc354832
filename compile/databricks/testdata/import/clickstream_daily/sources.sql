CREATE TABLE clickstream_raw (event_date date, page_id int, user_id bigint);

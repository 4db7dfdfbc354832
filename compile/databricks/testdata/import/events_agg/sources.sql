CREATE TABLE events_raw (date date, key text, val bigint);

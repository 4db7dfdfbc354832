CREATE TABLE marketing_events (event_date date, campaign_id int, revenue numeric(12,2));

#!/usr/bin/env bash
# The demo: the example pipelines on the embedded local PostgreSQL, from
# lint to a backfill, in under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
rwc=bin/rwc
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "rwc lint pipelines"
$rwc lint pipelines

step "rwc local start   (PostgreSQL under .rwc/, started on first use)"
url=$($rwc local start)
echo "$url"
# Every command below uses it: named, rather than as the default, so that
# an RWC_DATABASE_URL of the shell's is not used instead, and so that the
# demo runs in CI too, where rwc does not fall back to the local one.
export RWC_DATABASE_URL="$url"

step "load sample sources (pipelines/sample-data.sql)"
psql -q -X -v ON_ERROR_STOP=1 "$url" -f pipelines/sample-data.sql >/dev/null 2>&1

step "rwc plan   (what apply would do, against what was deployed)"
$rwc plan

# --allow-dirty: the demo runs the specs as they are on disk, edited or
# not, and from a copy that is not a git repository.
step "rwc apply  (refresh every flow, run the committed backfill file once)"
$rwc apply --allow-dirty

step "late data arrives for yesterday; rwc apply recomputes only that day (incremental)"
psql -q -X "$url" -c "INSERT INTO clickstream_events SELECT 10000000 + i, current_date - 1, '/late', i FROM generate_series(1, 500) i"
$rwc apply --allow-dirty

step "order_lines_daily is partitioned by day: a late order swaps yesterday's partition in (no DELETE, no dead rows)"
psql -q -X "$url" -c "INSERT INTO orders_fct VALUES (20000001, current_date - 1, 'emea', 7, 2, 9.99)"
$rwc apply --allow-dirty
psql -X "$url" -c "SELECT c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bounds, (SELECT count(*) FROM analytics.order_lines_daily o WHERE o.tableoid = c.oid) AS rows
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'analytics.order_lines_daily'::regclass ORDER BY 1"
$rwc events order_lines_daily

step "a bad upstream load: yesterday's quantities arrive negative; the expectation qty_positive fails inside the refresh's transaction, which rolls back"
psql -q -X "$url" -c "UPDATE orders_fct SET qty = -qty WHERE date = current_date - 1"
$rwc apply --allow-dirty || echo "(rwc apply exited $?: orders_enriched rolled back; the other flows committed)"
psql -X "$url" -c "SELECT count(*) FILTER (WHERE qty <= 0) AS negative_rows_readers_see, count(*) AS rows_of_yesterday FROM analytics.orders_enriched WHERE date = current_date - 1"
$rwc events orders_enriched --limit 1
step "upstream fixed: the next apply recomputes yesterday and the expectations pass"
psql -q -X "$url" -c "UPDATE orders_fct SET qty = -qty WHERE date = current_date - 1"
$rwc apply --allow-dirty
$rwc test pipelines orders_enriched

step "a one-off recompute of 18 older days of the clickstream, in batches of 7 days"
$rwc refresh pipelines clickstream_daily --where "event_date >= date_add(current_date(), -20) && event_date <= date_add(current_date(), -3)" --batch 7d --allow-dirty

step "a full refresh of sales_daily is refused (reset_allowed: false)"
$rwc refresh sales_daily --full --yes --allow-dirty || true

step "rwc status"
$rwc status

step "rwc events clickstream_daily"
$rwc events clickstream_daily

step "the result: page views of the last 3 days"
psql -X "$url" -c "SELECT event_date, page, views, sessions FROM analytics.clickstream_daily WHERE event_date >= current_date - 2 ORDER BY 1, 2"
echo "(stop the local PostgreSQL with: bin/rwc local stop)"

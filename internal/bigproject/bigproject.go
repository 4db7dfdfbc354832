// Package bigproject generates large rwc projects for benchmarks: the
// planning benchmark in compile and `make bench`'s timing of rwc plan.
package bigproject

import (
	"fmt"
	"strings"
	"testing/fstest"
)

// Files generates a project of pipelines×tables flows: realistic
// queries (fact⋈dimension joins, GROUP BY, a flow reading another flow's
// target), several predicate shapes and column types. variant changes a
// fifth of the flows the way a pull request would (widened predicates,
// added columns, changed queries), so a plan against it has work to do.
func Files(pipelines, tables int, variant bool) fstest.MapFS {
	m := fstest.MapFS{}
	for p := 0; p < pipelines; p++ {
		var b strings.Builder
		fmt.Fprintf(&b, "pipeline: domain%02d\nschema: mart%02d\ntables:\n", p, p)
		for t := 0; t < tables; t++ {
			changed := variant && (p*tables+t)%5 == 0
			days := 7 + t%4
			if changed {
				days += 23
			}
			name := fmt.Sprintf("t%02d_%02d", p, t)
			extra, extraCol := "", ""
			if changed {
				extra, extraCol = ", count(DISTINCT f.customer_id) AS customers", "      customers: bigint\n"
			}
			switch t % 4 {
			case 0: // fact ⋈ dimension, aggregated per day and region
				fmt.Fprintf(&b, `  %s:
    replace_where: sale_date >= date_add(current_date(), -%d)
    columns:
      sale_date: date
      region: text
      store_name: text
      revenue: numeric(14,2)
      orders: bigint
%s    query: |
      SELECT f.sale_date, d.region, d.store_name, sum(f.amount) AS revenue, count(*) AS orders%s
      FROM sales_%02d f
      JOIN store_dim_%02d d ON f.store_id = d.store_id
      WHERE f.status <> 'cancelled'
      GROUP BY f.sale_date, d.region, d.store_name
`, name, days, extraCol, extra, p, p)
			case 1: // two dimensions, a bounded window with a fixed start
				fmt.Fprintf(&b, `  %s:
    replace_where: event_date >= date('2026-01-01') && event_date >= date_add(current_date(), -%d)
    partition_by: event_date
    columns:
      event_date: date
      country: text
      device: text
      sessions: bigint
      avg_duration: double precision
%s    query: |
      SELECT f.event_date, c.country, v.device, count(*) AS sessions, avg(f.duration_s)::float8 AS avg_duration%s
      FROM sessions_%02d f
      JOIN customers_%02d c ON f.customer_id = c.customer_id
      LEFT JOIN devices v ON f.device_id = v.device_id
      GROUP BY f.event_date, c.country, v.device
`, name, days, extraCol, extra, p, p)
			case 2: // plain projection of a join, not aggregated
				q := "o.qty * o.price"
				if changed {
					q = "round(o.qty * o.price, 2)"
				}
				fmt.Fprintf(&b, `  %s:
    replace_where: order_date >= date_add(current_date(), -%d) && region in ['eu', 'us', 'apac']
    partition_by: order_date
    columns:
      order_id: bigint
      order_date: date
      region: text
      product_name: text
      amount: numeric(14,2)
    query: |
      SELECT o.order_id, o.order_date, o.region, p.product_name, %s AS amount
      FROM orders_%02d o
      JOIN products p ON o.product_id = p.product_id
`, name, days, q, p)
			case 3: // reads the target of this pipeline's first flow
				fmt.Fprintf(&b, `  %s:
    replace_where: sale_date >= date_add(current_date(), -%d)
    columns:
      sale_date: date
      region: text
      revenue: numeric(14,2)
      stores: bigint
    query: |
      SELECT sale_date, region, sum(revenue) AS revenue, count(DISTINCT store_name) AS stores
      FROM mart%02d.t%02d_%02d
      GROUP BY sale_date, region
`, name, days, p, p, t-3)
			}
		}
		m[fmt.Sprintf("domain%02d.yaml", p)] = &fstest.MapFile{Data: []byte(b.String())}
	}
	return m
}

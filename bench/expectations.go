package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// expectedSpec is the bench's flow with five typical expectations: two
// row checks, a not_null, a unique key and row bounds per day.
var expectedSpec = strings.Replace(strings.Replace(spec, "sales_enriched", "sales_expected", 1), "    query: |", `    expect:
      amount_positive:
        check: amount >= 0
      known_region:
        check: region in ['emea', 'amer', 'apac']
      keyed:
        not_null: [sale_id, date, store_name]
      one_row_per_sale:
        unique: [date, sale_id]
      day_loaded:
        rows: {min: 1, max_change: 50%}
    query: |`, 1)

// benchExpectations compares a whole-window refresh of the flow with
// expectations (expected) against the same refresh without (plain), both
// over the same sources, alternating who goes first round by round, as
// the whole process and as the refresh transaction (the event's duration,
// which includes the checks).
func benchExpectations(ctx context.Context, db *sql.DB, rounds int, plain, expected, touchDim func() error) error {
	var wall, inTx [2][]time.Duration
	flows := []string{"sales_enriched", "sales_expected"}
	for r := 0; r < rounds; r++ {
		if err := touchDim(); err != nil {
			return err
		}
		for i := range 2 {
			which := (r + i) % 2
			start := time.Now()
			if err := []func() error{plain, expected}[which](); err != nil {
				return err
			}
			wall[which] = append(wall[which], time.Since(start))
			ev, err := lastEvent(ctx, db, flows[which])
			if err != nil {
				return err
			}
			if ev.action != "recompute_window" {
				return fmt.Errorf("%s: %s, want a whole-window recompute", flows[which], ev.what())
			}
			inTx[which] = append(inTx[which], ev.duration)
		}
	}
	w0, w1, t0, t1 := median(wall[0]), median(wall[1]), median(inTx[0]), median(inTx[1])
	fmt.Printf("\n7-day window with five expectations against the same refresh without, alternating, median of %d rounds, one run:\n\n", rounds)
	fmt.Println("| | without | with five expectations | ratio |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	fmt.Printf("| rwc apply | %s | %s | %.2f× |\n", w0.Round(time.Millisecond), w1.Round(time.Millisecond), float64(w1)/float64(w0))
	fmt.Printf("| refresh transaction | %s | %s | %.2f× |\n", t0.Round(time.Millisecond), t1.Round(time.Millisecond), float64(t1)/float64(t0))
	fmt.Printf("\ngoal: with expectations ≤ 1.15× without\n")
	return nil
}

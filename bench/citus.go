package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgcluster"
)

// benchCitus measures a 7-day window on Citus (issue #18) at each of
// sizes (citusRun), each on a cluster of its own, and prints the figures.
func benchCitus(ctx context.Context, tmp, rwcBin string, sizes []int, rounds int) error {
	if why := pgcluster.CitusMissing(); why != "" {
		fmt.Printf("Citus: not measured: %s\n", why)
		return nil
	}
	var runs []citusFigures
	for _, n := range sizes {
		f, err := citusRun(ctx, filepath.Join(tmp, fmt.Sprint("citus-", n)), rwcBin, n, rounds)
		if err != nil {
			return err
		}
		runs = append(runs, f)
	}
	printCitus(runs, rounds)
	return nil
}

// citusFigures is one size's contests: the whole window, a late day,
// nothing changed, and the rows the last wrote in each round.
type citusFigures struct {
	rows              int
	whole, late, idle contest
	written           []int64
}

// citusRun measures a 7-day window on Citus: a coordinator
// and two workers on this machine, a fact of rows rows that Citus
// distributes by sale_id, a reference dimension, and a target that rwc
// creates distributed and co-located with the fact (distribution:). Round
// by round, alternating who goes first: the whole window (the dimension
// touched) by rwc and by the hand-written DELETE + INSERT … SELECT in
// psql, on a copy distributed alike, with Citus's settings and at rwc's
// pace; one late day of seven (a tenth of its rows changed) by rwc and by
// the same two scripts for that day; and rwc with nothing changed, and
// the rows it wrote.
func citusRun(ctx context.Context, tmp, rwcBin string, rows, rounds int) (citusFigures, error) {
	fig := citusFigures{rows: rows}
	dsn, stop, err := startCitus(ctx, tmp)
	defer stop()
	if err != nil {
		return fig, err
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return fig, err
	}
	defer db.Close()
	fmt.Printf("Citus: a coordinator and two workers, %d fact rows over 365 days…\n", rows)
	// One statement at a time: Citus runs some of them across the nodes.
	for _, stmt := range []string{
		`CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text, region text)`,
		`INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['emea','amer','apac'])[1 + i % 3] FROM generate_series(1, 1000) i`,
		`SELECT create_reference_table('store_dim')`,
		`CREATE TABLE sales_fct (sale_id bigint PRIMARY KEY, date date NOT NULL, store_id int NOT NULL, amount numeric(12,2))`,
		`SELECT create_distributed_table('sales_fct', 'sale_id')`,
		fmt.Sprintf(`INSERT INTO sales_fct SELECT i, current_date - 364 + ((i - 1)::bigint * 365 / %[1]d)::int, 1 + (i * 7) %% 1000, (i %% 10000) / 100.0 FROM generate_series(1, %[1]d) i`, rows),
		`CREATE INDEX ON sales_fct (date)`,
		`CREATE TABLE hand_enriched (sale_id bigint, date date, store_name text, region text, amount numeric(12,2))`,
		`SELECT create_distributed_table('hand_enriched', 'sale_id', colocate_with => 'sales_fct')`,
		`CREATE INDEX ON hand_enriched (date)`,
		`INSERT INTO hand_enriched SELECT f.sale_id, f.date, d.store_name, d.region, f.amount FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id WHERE f.date >= current_date - 6`,
		`VACUUM ANALYZE`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fig, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	s := strings.Replace(strings.Replace(spec, "date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -6)", 1),
		"    query: |", "    distribution: {by: sale_id, colocate_with: sales_fct}\n    query: |", 1)
	apply, err := applier(tmp, rwcBin, dsn, "sales_enriched", s)
	if err != nil {
		return fig, err
	}
	if _, err := apply(); err != nil {
		return fig, err
	}
	psql, err := psqlRunner(dsn)
	if err != nil {
		return fig, err
	}
	// The hand-written SQL as a user runs it (Citus's settings) and at
	// rwc's pace (the executor setting rwc's refreshes run with).
	paced := "SET LOCAL citus.executor_slow_start_interval = '" + run.CitusSlowStart + "';"
	hand := func(pace, where string) func() error {
		return func() error {
			return psql(`BEGIN; ` + pace + ` DELETE FROM hand_enriched WHERE ` + where + `;
				INSERT INTO hand_enriched SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
				FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id WHERE f.` + where + `; COMMIT`)
		}
	}
	const window = "date >= current_date - 6"
	touchDim := func() error {
		_, err := db.ExecContext(ctx, `UPDATE store_dim SET region = region WHERE store_id = 1`)
		return err
	}
	whole, late, idle := &fig.whole, &fig.late, &fig.idle
	for r := range rounds {
		if err := touchDim(); err != nil {
			return fig, err
		}
		if err := whole.round(ctx, db, []func() error{quietly(apply), hand("", window), hand(paced, window)}, []string{"sales_enriched", "", ""}, r); err != nil {
			return fig, err
		}
		// One late day: a tenth of its fact rows changed.
		lateDay := fmt.Sprintf("date = current_date - %d", 1+(r+1)%6)
		if _, err := db.ExecContext(ctx, `UPDATE sales_fct SET amount = amount + 1 WHERE `+lateDay+` AND sale_id % 10 = 0`); err != nil {
			return fig, err
		}
		if err := late.round(ctx, db, []func() error{quietly(apply), hand("", lateDay), hand(paced, lateDay)}, []string{"sales_enriched", "", ""}, r); err != nil {
			return fig, err
		}
		if err := idle.round(ctx, db, []func() error{quietly(apply)}, []string{"sales_enriched"}, 0); err != nil {
			return fig, err
		}
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT rows_inserted + rows_deleted FROM rwc.events WHERE flow = 'sales_enriched' ORDER BY id DESC LIMIT 1`).Scan(&n); err != nil {
			return fig, err
		}
		fig.written = append(fig.written, n)
	}
	return fig, nil
}

// printCitus renders benchCitus's figures.
func printCitus(runs []citusFigures, rounds int) {
	fmt.Printf("\nCitus, a 7-day window over a distributed fact and a reference dimension into a co-located distributed target, medians of %d rounds, one run\n", rounds)
	fmt.Println("(rwc apply: the whole process; refresh: its transaction as the event log records it; hand-written: DELETE + INSERT … SELECT in one transaction, in the server's psql, on a copy distributed alike, with Citus's settings and at rwc's pace):")
	fmt.Println()
	fmt.Println("| fact rows | refresh | rwc apply | refresh | hand-written | at rwc's pace | rwc apply ÷ hand | ÷ hand at rwc's pace | what rwc did |")
	fmt.Println("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, f := range runs {
		row := func(name string, c contest) {
			w, h, hp := median(c.wall[0]), median(c.wall[1]), median(c.wall[2])
			fmt.Printf("| %d | %s | %s | %s | %s | %s | %.2f× | %.2f× | %s |\n", f.rows, name, w.Round(time.Millisecond), median(c.inTx[0]).Round(time.Millisecond),
				h.Round(time.Millisecond), hp.Round(time.Millisecond), ratio(w, h), ratio(w, hp), counts(c.actions[0]))
		}
		row("whole window (dimension touched)", f.whole)
		row("1 late day of 7", f.late)
		fmt.Printf("| %d | nothing changed | %s | %s | | | | | %s; rows written: %v |\n", f.rows, median(f.idle.wall[0]).Round(time.Millisecond),
			median(f.idle.inTx[0]).Round(time.Millisecond), counts(f.idle.actions[0]), f.written)
	}
	fmt.Println("\nthe late day ÷ the whole window:")
	for _, f := range runs {
		late, whole := f.late, f.whole
		fmt.Printf("- %d fact rows: rwc apply %.2f× (refresh %.2f×); hand-written %.2f×, at rwc's pace %.2f×\n", f.rows,
			ratio(median(late.wall[0]), median(whole.wall[0])), ratio(median(late.inTx[0]), median(whole.inTx[0])),
			ratio(median(late.wall[1]), median(whole.wall[1])), ratio(median(late.wall[2]), median(whole.wall[2])))
	}
	fmt.Println("goals: the late day ≤ 0.35× the whole window; nothing changed writes 0 rows; the whole window ≤ 1.2× the hand-written")
}

// startCitus starts a coordinator and two workers in tmp, with a database
// bench on each holding the citus extension, the workers added, and
// returns the coordinator's DSN, and how to stop them all.
func startCitus(ctx context.Context, tmp string) (string, func(), error) {
	var nodes []*pgcluster.Cluster
	stop := func() {
		for _, n := range nodes {
			n.Stop()
		}
	}
	for i := range 3 {
		c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, fmt.Sprintf("citus%d", i)), Fsync: true, Settings: pgcluster.CitusSettings})
		if err != nil {
			return "", stop, err
		}
		nodes = append(nodes, c)
		if err := c.Start(ctx); err != nil {
			return "", stop, err
		}
	}
	return nodes[0].DSN("bench"), stop, pgcluster.CitusDatabase(ctx, nodes, "bench")
}

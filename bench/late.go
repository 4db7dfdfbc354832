package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// lateDay is one fact size's figures after 1,000 late rows for yesterday
// (the pg_ivm workload's batch): the insert, then bringing each target up
// to date, alternating who goes first: rwc apply of the flow capturing by
// triggers, of the flow capturing by fingerprints, and the hand-written
// DELETE+INSERT of that day in psql, each a whole process.
type lateDay struct {
	inserts []time.Duration
	wall    [3][]time.Duration // triggers, fingerprints, hand-written
	inTx    [2][]time.Duration // rwc's refresh transactions
	actions [2]map[string]int
	ivm     []time.Duration // pg_ivm: the same 10 inserts into a copy of the fact under an IMMV
	ivmNote string          // why pg_ivm was not measured
}

// benchLateDay runs batches rounds on fact, whose flows (triggers first)
// applies and flows name.
func benchLateDay(ctx context.Context, db *sql.DB, dsn, fact string, applies [2]func() error, flows [2]string, batches int) (*lateDay, error) {
	hand := "hand_" + fact
	query := "SELECT f.sale_id, f.date, d.store_name, d.region, f.amount FROM " + fact + " f JOIN store_dim d ON f.store_id = d.store_id"
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %[1]s AS %[2]s WHERE f.date >= current_date - 7;
		CREATE INDEX ON %[1]s (date)`, hand, query)); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+hand); err != nil {
		return nil, err
	}
	psql, err := psqlRunner(dsn)
	if err != nil {
		return nil, err
	}
	handWritten := fmt.Sprintf(`BEGIN; DELETE FROM %s WHERE date = current_date - 1; INSERT INTO %[1]s %s WHERE f.date = current_date - 1; COMMIT;`, hand, query)
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT max(sale_id) + 1 FROM "+fact).Scan(&next); err != nil {
		return nil, err
	}
	// What the write-cost batches before left for the flows, untimed.
	for _, apply := range applies {
		if err := apply(); err != nil {
			return nil, err
		}
	}
	l := &lateDay{actions: [2]map[string]int{{}, {}}}
	run := [3]func() error{applies[0], applies[1], func() error { return psql(handWritten) }}
	for b := 0; b < batches; b++ {
		start := time.Now()
		if _, err := db.ExecContext(ctx, `INSERT INTO `+fact+` SELECT $1 + i, current_date - 1, 1 + (i * 7) % 1000, 1.5 FROM generate_series(1, 1000) i`, next); err != nil {
			return nil, err
		}
		l.inserts = append(l.inserts, time.Since(start))
		next += 1000
		for j := range 3 {
			i := (b + j) % 3
			start := time.Now()
			if err := run[i](); err != nil {
				return nil, err
			}
			l.wall[i] = append(l.wall[i], time.Since(start))
			if i < 2 {
				ev, err := lastEvent(ctx, db, flows[i])
				if err != nil {
					return nil, err
				}
				l.inTx[i], l.actions[i][ev.what()] = append(l.inTx[i], ev.duration), l.actions[i][ev.what()]+1
			}
		}
	}
	return l, nil
}

// printLateDays prints the late-day table of each size.
func printLateDays(sizes []int, days []*lateDay) {
	fmt.Printf("\none late day of seven: 1,000 rows for yesterday into the fact, then each target brought up to date, alternating, median of %d rounds, one run\n", len(days[0].inserts))
	fmt.Println("(rwc apply and psql: whole processes; refresh: rwc's refresh transaction as the event log records it):")
	fmt.Println()
	fmt.Println("| fact rows | triggers: rwc apply | refresh | fingerprints: rwc apply | refresh | hand-written in psql | triggers ÷ hand | fingerprints ÷ hand | what rwc did (triggers) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for k, l := range days {
		m := func(d []time.Duration) time.Duration { return median(d).Round(time.Millisecond) }
		fmt.Printf("| %d | %s | %s | %s | %s | %s | %.2f× | %.2f× | %s |\n", sizes[k], m(l.wall[0]), m(l.inTx[0]), m(l.wall[1]), m(l.inTx[1]), m(l.wall[2]),
			ratio(median(l.wall[0]), median(l.wall[2])), ratio(median(l.wall[1]), median(l.wall[2])), counts(l.actions[0]))
	}
	fmt.Println("\ngoal: one late day ≤ 1.3× the hand-written single-day DELETE+INSERT at each size")
	fmt.Println("\nthe pg_ivm workload, rwc's side: 10 batches of 1,000 late rows, each insert followed by rwc apply (triggers):")
	fmt.Println()
	fmt.Println("| fact rows | inserts (10) | rwc applies (10) | total | pg_ivm: inserts into the IMMV's fact (10) | rwc ÷ pg_ivm |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: |")
	for k, l := range days {
		ins, app := sum(l.inserts[:10]), sum(l.wall[0][:10])
		ivm, vs := l.ivmNote, ""
		if l.ivm != nil {
			ivm, vs = sum(l.ivm).Round(time.Millisecond).String(), fmt.Sprintf("%.2f×", ratio(ins+app, sum(l.ivm)))
		}
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", sizes[k], ins.Round(time.Millisecond), app.Round(time.Millisecond), (ins + app).Round(time.Millisecond), ivm, vs)
	}
	fmt.Println("\ngoal: rwc's total ≤ 2× pg_ivm's")
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

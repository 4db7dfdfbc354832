package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// lateDay is one fact size's figures after 1,000 late rows for yesterday
// (the pg_ivm workload's batch): the insert, then bringing each target up
// to date (late); and after the dimension was touched, the whole window
// (whole).
type lateDay struct {
	inserts     []time.Duration
	late, whole contest
	ivm         []time.Duration // pg_ivm: the same 10 inserts into a copy of the fact under an IMMV
	ivmNote     string          // why pg_ivm was not measured
	// immediate: the same 10 inserts into a copy of the fact whose flow
	// says maintain: immediate (its triggers keep the target current).
	immediate []time.Duration
}

// contest is rounds of contenders bringing their targets up to date,
// alternating who goes first, each a whole process: here rwc apply of the
// flow capturing by triggers, of the flow capturing by fingerprints, and
// the hand-written DELETE+INSERT in psql.
type contest struct {
	wall    [3][]time.Duration // triggers, fingerprints, hand-written
	inTx    [3][]time.Duration // rwc's refresh transactions
	actions [3]map[string]int
}

// round runs round r of the contest: each of run (n of them), and for an
// rwc flow (flows[i] != "") the event its refresh left.
func (c *contest) round(ctx context.Context, db *sql.DB, run []func() error, flows []string, r int) error {
	for j := range run {
		i := (r + j) % len(run)
		start := time.Now()
		if err := run[i](); err != nil {
			return err
		}
		c.wall[i] = append(c.wall[i], time.Since(start))
		if flows[i] == "" {
			continue
		}
		ev, err := lastEvent(ctx, db, flows[i])
		if err != nil {
			return err
		}
		if c.actions[i] == nil {
			c.actions[i] = map[string]int{}
		}
		c.inTx[i] = append(c.inTx[i], ev.duration)
		c.actions[i][ev.what()]++
	}
	return nil
}

// benchLateDay runs batches late-day rounds on fact, then wholes rounds
// of the whole window, whose flows (triggers first) applies and flows name.
func benchLateDay(ctx context.Context, db *sql.DB, dsn, fact string, applies [2]func() error, flows [2]string, batches, wholes int) (*lateDay, error) {
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
	hand1 := fmt.Sprintf(`BEGIN; DELETE FROM %s WHERE date = current_date - 1; INSERT INTO %[1]s %s WHERE f.date = current_date - 1; COMMIT;`, hand, query)
	hand7 := fmt.Sprintf(`BEGIN; DELETE FROM %s WHERE date >= current_date - 7; INSERT INTO %[1]s %s WHERE f.date >= current_date - 7; COMMIT;`, hand, query)
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
	l := &lateDay{}
	for b := 0; b < batches; b++ {
		start := time.Now()
		if _, err := db.ExecContext(ctx, `INSERT INTO `+fact+` SELECT $1 + i, current_date - 1, 1 + (i * 7) % 1000, 1.5 FROM generate_series(1, 1000) i`, next); err != nil {
			return nil, err
		}
		l.inserts = append(l.inserts, time.Since(start))
		next += 1000
		if err := l.late.round(ctx, db, []func() error{applies[0], applies[1], func() error { return psql(hand1) }}, append(flows[:], ""), b); err != nil {
			return nil, err
		}
	}
	for w := 0; w < wholes; w++ {
		// A dimension changed: rwc recomputes the whole window, as the
		// hand-written contender does.
		if _, err := db.ExecContext(ctx, `UPDATE store_dim SET region = region WHERE store_id = 1`); err != nil {
			return nil, err
		}
		if err := l.whole.round(ctx, db, []func() error{applies[0], applies[1], func() error { return psql(hand7) }}, append(flows[:], ""), w); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// printLateDays prints the late-day and whole-window tables of each size.
func printLateDays(sizes []int, days []*lateDay) {
	printContest(sizes, days, func(l *lateDay) *contest { return &l.late }, "one late day of seven: 1,000 rows for yesterday into the fact, then each target brought up to date",
		"goal: one late day ≤ 1.3× the hand-written single-day DELETE+INSERT at each size")
	printContest(sizes, days, func(l *lateDay) *contest { return &l.whole }, "the whole window: the dimension touched, then each target's 7-day window recomputed",
		"goal: the whole window ≤ 1.10× the hand-written DELETE+INSERT at each size")
	fmt.Println("\nthe pg_ivm workload, rwc's side: 10 batches of 1,000 late rows, each insert followed by rwc apply (triggers):")
	fmt.Println()
	fmt.Println("| fact rows | inserts (10) | rwc applies (10) | total | pg_ivm: inserts into the IMMV's fact (10) | rwc ÷ pg_ivm |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: |")
	for k, l := range days {
		ins, app := sum(l.inserts[:10]), sum(l.late.wall[0][:10])
		ivm, vs := l.ivmNote, ""
		if l.ivm != nil {
			ivm, vs = sum(l.ivm).Round(time.Millisecond).String(), fmt.Sprintf("%.2f×", ratio(ins+app, sum(l.ivm)))
		}
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", sizes[k], ins.Round(time.Millisecond), app.Round(time.Millisecond), (ins + app).Round(time.Millisecond), ivm, vs)
	}
	fmt.Println("\ngoal: rwc's total ≤ 2× pg_ivm's")
	fmt.Println("\nthe same workload with maintain: immediate (rwc's triggers keep the target current inside each insert; no apply):")
	fmt.Println()
	fmt.Println("| fact rows | inserts into the immediate flow's fact (10) | the same into the fact capturing by triggers (10, above) | pg_ivm's (10) | immediate ÷ pg_ivm |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: |")
	for k, l := range days {
		imm := sum(l.immediate)
		ivm, vs := l.ivmNote, ""
		if l.ivm != nil {
			ivm, vs = sum(l.ivm).Round(time.Millisecond).String(), fmt.Sprintf("%.2f×", ratio(imm, sum(l.ivm)))
		}
		fmt.Printf("| %d | %s | %s | %s | %s |\n", sizes[k], imm.Round(time.Millisecond), sum(l.inserts[:10]).Round(time.Millisecond), ivm, vs)
	}
	fmt.Println("\ngoal: rwc's total ≤ 2× pg_ivm's")
}

// printContest prints one contest of each size (of picks out).
func printContest(sizes []int, days []*lateDay, of func(*lateDay) *contest, what, goal string) {
	fmt.Printf("\n%s, alternating, median of %d rounds, one run\n", what, len(of(days[0]).wall[0]))
	fmt.Println("(rwc apply and psql: whole processes; refresh: rwc's refresh transaction as the event log records it):")
	fmt.Println()
	fmt.Println("| fact rows | triggers: rwc apply | refresh | fingerprints: rwc apply | refresh | hand-written in psql | triggers ÷ hand | fingerprints ÷ hand | what rwc did (triggers) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for k, l := range days {
		c := of(l)
		m := func(d []time.Duration) time.Duration { return median(d).Round(time.Millisecond) }
		fmt.Printf("| %d | %s | %s | %s | %s | %s | %.2f× | %.2f× | %s |\n", sizes[k], m(c.wall[0]), m(c.inTx[0]), m(c.wall[1]), m(c.inTx[1]), m(c.wall[2]),
			ratio(median(c.wall[0]), median(c.wall[2])), ratio(median(c.wall[1]), median(c.wall[2])), counts(c.actions[0]))
	}
	fmt.Println("\n" + goal)
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

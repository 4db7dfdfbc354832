package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// benchCapture measures, for each fact size, what a refresh costs when
// nothing changed: the bench flow capturing by fingerprints (it probes the
// fact's and the target's windows) against the same flow capturing by
// triggers (capture: triggers), alternating round by round, as the whole
// rwc apply process and as the refresh transaction; then what the
// triggers cost the fact's writers: 1,000-row inserts into the fact
// (which carries rwc's trigger) against the same inserts into a copy of
// it without.
func benchCapture(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin string, sizes []int, rounds int) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text, region text);
		INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['emea','amer','apac'])[1 + i % 3] FROM generate_series(1, 1000) i`); err != nil {
		return err
	}
	type row struct {
		size int
		contest
		plainIns, trgIns []time.Duration
	}
	var rows []*row
	var days []*lateDay
	for _, n := range sizes {
		fmt.Printf("generating %d fact rows over 365 days…\n", n)
		fact := fmt.Sprintf("sales_fct_%d", n)
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`
			CREATE TABLE %[1]s (sale_id bigint PRIMARY KEY, date date NOT NULL, store_id int NOT NULL, amount numeric(12,2));
			INSERT INTO %[1]s SELECT i, current_date - 364 + ((i - 1)::bigint * 365 / %[2]d)::int, 1 + (i * 7) %% 1000, (i %% 10000) / 100.0 FROM generate_series(1, %[2]d) i;
			CREATE INDEX ON %[1]s (date);
			CREATE TABLE %[1]s_copy (LIKE %[1]s INCLUDING ALL)`, fact, n)); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+fact); err != nil {
			return err
		}
		r := &row{size: n}
		var applies [2]func() error
		for i, mode := range []string{"fingerprints", "triggers"} {
			flow := fmt.Sprintf("capture_%s_%d", mode, n)
			s := strings.NewReplacer("sales_enriched", flow, "FROM sales_fct f", "FROM "+fact+" f",
				"    query: |", "    capture: "+mode+"\n    query: |").Replace(spec)
			withOutput, err := applier(tmp, rwcBin, dsn, flow, s)
			if err != nil {
				return err
			}
			apply := quietly(withOutput)
			// The first apply creates the target and installs the
			// triggers, the second stores what they vouch for.
			for range 2 {
				if err := apply(); err != nil {
					return err
				}
			}
			applies[i] = apply
		}
		flows := []string{fmt.Sprintf("capture_fingerprints_%d", n), fmt.Sprintf("capture_triggers_%d", n)}
		for k := 0; k < rounds; k++ {
			if err := r.round(ctx, db, applies[:], flows, k); err != nil {
				return err
			}
		}
		var err error
		if r.plainIns, r.trgIns, err = insertCost(ctx, db, fact, rounds); err != nil {
			return err
		}
		rows = append(rows, r)
		late, err := benchLateDay(ctx, db, dsn, fact, [2]func() error{applies[1], applies[0]}, [2]string{flows[1], flows[0]}, max(rounds, 10), rounds)
		if err != nil {
			return err
		}
		if late.ivm, late.ivmNote, err = ivmInserts(ctx, db, fact, 10); err != nil {
			return err
		}
		if late.immediate, err = immediateInserts(ctx, db, dsn, tmp, rwcBin, fact, 10); err != nil {
			return err
		}
		days = append(days, late)
	}
	fmt.Printf("\nnothing changed: the 7-day window's flow capturing by fingerprints against the same flow capturing by triggers, alternating, median of %d rounds, one run\n", rounds)
	fmt.Println("(rwc apply: the whole process; refresh: the refresh transaction as the event log records it):")
	fmt.Println()
	fmt.Println("| fact rows | fingerprints: rwc apply | refresh | triggers: rwc apply | refresh | what rwc did (triggers) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rows {
		fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", r.size, median(r.wall[0]).Round(time.Millisecond), median(r.inTx[0]).Round(time.Millisecond),
			median(r.wall[1]).Round(time.Millisecond), median(r.inTx[1]).Round(time.Millisecond), counts(r.actions[1]))
	}
	fmt.Println("\ngoal: nothing changed, rwc apply ≤ 30 ms at every size (flat)")
	fmt.Printf("\nwhat the triggers cost writers: a 1,000-row INSERT into the fact (rwc's trigger on it) against the same into a copy without, alternating, median of %d batches:\n\n", 10*rounds)
	fmt.Println("| fact rows | without the trigger | with it | ratio |")
	fmt.Println("| ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		a, b := median(r.plainIns), median(r.trgIns)
		fmt.Printf("| %d | %s | %s | %.2f× |\n", r.size, a.Round(10*time.Microsecond), b.Round(10*time.Microsecond), ratio(b, a))
	}
	fmt.Println("\ngoal: the write overhead rwc adds ≤ 1.25×")
	printLateDays(sizes, days)
	return nil
}

// applier writes flow's spec to a directory of its own (in no git
// repository: --allow-dirty) and returns how bin applies it, with what it
// printed.
func applier(tmp, bin, dsn, flow, spec string) (func() (string, error), error) {
	dir := filepath.Join(tmp, "pipelines-"+flow)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(spec), 0o644); err != nil {
		return nil, err
	}
	return func() (string, error) {
		out, err := exec.Command(bin, "--dsn", dsn, "apply", "--allow-dirty", dir).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s apply: %v\n%s", bin, err, out)
		}
		return string(out), nil
	}, nil
}

// quietly is apply without its output.
func quietly(apply func() (string, error)) func() error {
	return func() error {
		_, err := apply()
		return err
	}
}

// insertCost times 10 batches a round of 1,000 new rows into fact and into
// its copy, alternating: late rows for a day a month ago, outside the
// window, so that the days the late-day rounds recompute keep their size.
func insertCost(ctx context.Context, db *sql.DB, fact string, rounds int) (plain, triggered []time.Duration, err error) {
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT max(sale_id) + 1 FROM "+fact).Scan(&next); err != nil {
		return nil, nil, err
	}
	for b := 0; b < 10*rounds; b++ {
		for j := range 2 {
			table, into := fact+"_copy", &plain
			if (b+j)%2 == 1 {
				table, into = fact, &triggered
			}
			start := time.Now()
			if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` SELECT $1 + i, current_date - 30, 1 + (i * 7) % 1000, 1.5 FROM generate_series(1, 1000) i`, next); err != nil {
				return nil, nil, err
			}
			*into = append(*into, time.Since(start))
			next += 1000
		}
	}
	return plain, triggered, nil
}

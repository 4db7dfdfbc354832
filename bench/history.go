package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// benchHistory measures what a target's history costs a 7-day window's
// refresh (issue #15): two flows over the same sources, a plain target
// (indexed on the date, rwc's default) and one partitioned by day, each
// refreshed whole (the dimension touched) while their history grows to
// each of levels rows. The history is not made by refreshes: it is
// generated straight into the targets (INSERT … SELECT generate_series,
// over the 358 days before the window; the partitioned target's partitions
// for those days made by hand first, with rwc's names), as DML into a
// target is kept by later refreshes. Then, at the last level, on the
// partitioned target: 100 consecutive refreshes with autovacuum off, an
// incremental refresh of one changed day against the whole window, and a
// reader's waits during swaps.
func benchHistory(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin string, levels []int, rounds int) error {
	const perDay = 9000 // the window's rows a day: 7 days, 63,000 rows
	fmt.Printf("sources: %d rows a day over the 7-day window (%d rows), a 1000-row dimension\n", perDay, 7*perDay)
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`
		CREATE EXTENSION IF NOT EXISTS pgstattuple;
		CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text, region text);
		INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['emea','amer','apac'])[1 + i %% 3] FROM generate_series(1, 1000) i;
		CREATE TABLE sales_fct (sale_id bigint PRIMARY KEY, date date NOT NULL, store_id int NOT NULL, amount numeric(12,2));
		INSERT INTO sales_fct SELECT i, current_date - (i %% 7)::int, 1 + (i * 7) %% 1000, (i %% 10000) / 100.0 FROM generate_series(1, %d) i;
		CREATE INDEX ON sales_fct (date)`, 7*perDay)); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return err
	}
	plain, err := historyFlow(ctx, db, dsn, tmp, rwcBin, "hist_plain", "")
	if err != nil {
		return err
	}
	parted, err := historyFlow(ctx, db, dsn, tmp, rwcBin, "hist_part", "    partitioning: {by: date, interval: day}\n")
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `DO $$ BEGIN
		FOR d IN 7..364 LOOP
			EXECUTE format('CREATE TABLE hist_part_p%s PARTITION OF hist_part FOR VALUES FROM (%L) TO (%L)',
				to_char(current_date - d, 'YYYYMMDD'), current_date - d, current_date - d + 1);
		END LOOP; END $$`); err != nil {
		return err
	}
	touchDim := func() error {
		_, err := db.ExecContext(ctx, `UPDATE store_dim SET region = region WHERE store_id = 1`)
		return err
	}
	type level struct {
		rows                       int
		plain, part                []time.Duration // refresh transaction
		plainWall, partWall        []time.Duration
		plainDead, partDead        int64
		plainActions, partActions  map[string]int
		plainPages, partTotalPages int64
	}
	var results []level
	have := 0
	for _, n := range levels {
		fmt.Printf("history: growing both targets to %d rows…\n", n)
		start := time.Now()
		for _, t := range []string{"hist_plain", "hist_part"} {
			if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s
				SELECT i, current_date - 7 - (i %% 358)::int, 'store ' || (1 + i %% 1000), 'emea', (i %% 10000) / 100.0
				FROM generate_series(%d, %d) i`, t, 100_000_000+have, 100_000_000+n-1)); err != nil {
				return err
			}
			if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+t); err != nil {
				return err
			}
		}
		have = n
		fmt.Printf("  (%s)\n", time.Since(start).Round(time.Second))
		l := level{rows: n, plainActions: map[string]int{}, partActions: map[string]int{}}
		for r := 0; r < rounds; r++ {
			if err := touchDim(); err != nil {
				return err
			}
			for i := range 2 {
				which := (r + i) % 2 // who goes first alternates
				apply, flow := []func() error{plain, parted}[which], []string{"hist_plain", "hist_part"}[which]
				begin := time.Now()
				if err := apply(); err != nil {
					return err
				}
				wall := time.Since(begin)
				ev, err := lastEvent(ctx, db, flow)
				if err != nil {
					return err
				}
				if which == 0 {
					l.plain, l.plainWall = append(l.plain, ev.duration), append(l.plainWall, wall)
					l.plainActions[ev.what()]++
				} else {
					l.part, l.partWall = append(l.part, ev.duration), append(l.partWall, wall)
					l.partActions[ev.what()]++
				}
			}
		}
		if l.plainDead, err = deadInWindow(ctx, db, "hist_plain"); err != nil {
			return err
		}
		if l.partDead, err = deadInWindow(ctx, db, "hist_part"); err != nil {
			return err
		}
		results = append(results, l)
	}
	fmt.Printf("\nA 7-day window refreshed whole (the dimension touched) on targets holding history, median of %d rounds each, alternating, one run\n", rounds)
	fmt.Println("(refresh: the refresh transaction as the event log records it; rwc apply: the whole process, VACUUM when due included; dead: dead row versions in the target after the last round, pgstattuple):")
	fmt.Println()
	fmt.Println("| history rows | plain: refresh | ÷ first | rwc apply | ÷ first | dead | partitioned: refresh | ÷ first | rwc apply | ÷ first | dead | partitioned ÷ plain (refresh) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	p0, pw0, q0, qw0 := median(results[0].plain), median(results[0].plainWall), median(results[0].part), median(results[0].partWall)
	for _, l := range results {
		p, pw, q, qw := median(l.plain), median(l.plainWall), median(l.part), median(l.partWall)
		fmt.Printf("| %d | %s | %.2f× | %s | %.2f× | %d | %s | %.2f× | %s | %.2f× | %d | %.2f× |\n", l.rows,
			p.Round(time.Millisecond), ratio(p, p0), pw.Round(time.Millisecond), ratio(pw, pw0), l.plainDead,
			q.Round(time.Millisecond), ratio(q, q0), qw.Round(time.Millisecond), ratio(qw, qw0), l.partDead, ratio(q, p))
	}
	fmt.Printf("\nrwc's refreshes: plain %s; partitioned %s\n", counts(results[len(results)-1].plainActions), counts(results[len(results)-1].partActions))
	fmt.Println("goals: 32M ≤ 1.3× 1M for both; partitioned ≤ 0.8× plain; dead rows left by the partitioned refresh = 0")

	if err := benchRepeatPartitioned(ctx, db, parted, touchDim, 100); err != nil {
		return err
	}
	return benchIncrementalPartitioned(ctx, db, parted, touchDim, rounds, perDay)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// historyFlow writes the spec of one flow (a copy of the main benchmark's
// sales_enriched, its window the 7 days to today), creates its target with
// a first apply, and returns how to apply it again.
func historyFlow(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin, flow, partitioning string) (func() error, error) {
	dir := filepath.Join(tmp, "pipelines-"+flow)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := strings.Replace(strings.Replace(spec, "sales_enriched", flow, 1), "date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -6)", 1)
	s = strings.Replace(s, "    query: |", partitioning+"    query: |", 1)
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(s), 0o644); err != nil {
		return nil, err
	}
	apply := func() error {
		cmd := exec.Command(rwcBin, "--dsn", dsn, "apply", "--allow-dirty", dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s apply: %v\n%s", rwcBin, err, out)
		}
		return nil
	}
	return apply, apply()
}

// deadInWindow counts the dead row versions in a target's relations
// (pgstattuple reads the pages): the table for a plain one; for a
// partitioned one, its partitions of the last 10 days (the others are
// history, which no refresh writes).
func deadInWindow(ctx context.Context, db *sql.DB, table string) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT coalesce(sum((pgstattuple(c.oid)).dead_tuple_count), 0)::bigint FROM pg_class c
		WHERE c.oid = $1::regclass AND c.relkind = 'r'
		   OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::regclass)
		      AND c.relname >= $2 || '_p' || to_char(current_date - 10, 'YYYYMMDD')`, table, table).Scan(&n)
	return n, err
}

// benchRepeatPartitioned runs n whole-window refreshes of the partitioned
// target in a row with autovacuum off, the first against the n-th, and the
// dead rows left; a reader reads a day of the window through the parent
// all along, and its longest wait is the swap's lock.
func benchRepeatPartitioned(ctx context.Context, db *sql.DB, apply, touchDim func() error, n int) error {
	for _, stmt := range []string{`ALTER SYSTEM SET autovacuum = off`, `SELECT pg_reload_conf()`} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	defer func() {
		db.ExecContext(ctx, `ALTER SYSTEM RESET autovacuum`)
		db.ExecContext(ctx, `SELECT pg_reload_conf()`)
	}()
	rd := startReader(ctx, db, `SELECT count(*) FROM hist_part WHERE date = current_date - 3`)
	time.Sleep(time.Second)
	idle := rd.snapshot()
	var wall, inTx []time.Duration
	actions := map[string]int{}
	for i := 0; i < n; i++ {
		if err := touchDim(); err != nil {
			return err
		}
		start := time.Now()
		if err := apply(); err != nil {
			return err
		}
		wall = append(wall, time.Since(start))
		ev, err := lastEvent(ctx, db, "hist_part")
		if err != nil {
			return err
		}
		inTx = append(inTx, ev.duration)
		actions[ev.what()]++
	}
	during := rd.stop()
	dead, err := deadInWindow(ctx, db, "hist_part")
	if err != nil {
		return err
	}
	k := 5
	fmt.Printf("\npartitioned target: %d whole-window refreshes in a row, autovacuum off (%s), the last against the first:\n\n", n, counts(actions))
	fmt.Println("| | first | last | last ÷ first | median of last 5 ÷ median of first 5 |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	fmt.Printf("| rwc apply | %s | %s | %.2f× | %.2f× |\n", wall[0].Round(time.Millisecond), wall[n-1].Round(time.Millisecond),
		ratio(wall[n-1], wall[0]), ratio(median(wall[n-k:]), median(wall[:k])))
	fmt.Printf("| refresh transaction | %s | %s | %.2f× | %.2f× |\n", inTx[0].Round(time.Millisecond), inTx[n-1].Round(time.Millisecond),
		ratio(inTx[n-1], inTx[0]), ratio(median(inTx[n-k:]), median(inTx[:k])))
	fmt.Printf("\ndead row versions in the window's partitions after them: %d; goal: the 100th ≤ 1.1× the first\n", dead)
	fmt.Printf("\na reader reading one day of the window through the parent, 5 ms between reads, throughout (%d reads; idle for a second before: %d reads):\n\n", len(during), len(idle))
	fmt.Println("| | median read | 99th percentile | longest |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	for _, row := range []struct {
		name  string
		reads []time.Duration
	}{{"idle", idle}, {"during the refreshes", during}} {
		fmt.Printf("| %s | %s | %s | %s |\n", row.name, median(row.reads).Round(10*time.Microsecond),
			percentile(row.reads, 0.99).Round(10*time.Microsecond), percentile(row.reads, 1).Round(10*time.Microsecond))
	}
	fmt.Println("\nthe longest read less the idle median is the longest a reader waited for the swap's lock")
	return nil
}

// benchIncrementalPartitioned compares, on the partitioned target, an
// incremental refresh after rows changed in one day of the 7 (one
// partition swapped) with a whole-window refresh (the dimension touched:
// 7 swapped), round by round.
func benchIncrementalPartitioned(ctx context.Context, db *sql.DB, apply, touchDim func() error, rounds, perDay int) error {
	day := 0
	changeDay := func() error {
		day++
		_, err := db.ExecContext(ctx, `UPDATE sales_fct SET amount = amount + 1 WHERE date = current_date - $1::int AND sale_id % 10 = 0`, 1+day%6)
		return err
	}
	kinds := []struct {
		name string
		prep func() error
	}{{"incremental, 1 day of 7 changed", changeDay}, {"whole window (dimension touched)", touchDim}}
	wall := make([][]time.Duration, 2)
	inTx := make([][]time.Duration, 2)
	actions := []map[string]int{{}, {}}
	for r := 0; r < rounds; r++ {
		for i, k := range kinds {
			if err := k.prep(); err != nil {
				return err
			}
			start := time.Now()
			if err := apply(); err != nil {
				return err
			}
			wall[i] = append(wall[i], time.Since(start))
			ev, err := lastEvent(ctx, db, "hist_part")
			if err != nil {
				return err
			}
			inTx[i] = append(inTx[i], ev.duration)
			actions[i][ev.what()]++
		}
	}
	fmt.Printf("\npartitioned target: a tenth of one day's %d rows changed, against the whole window, median of %d rounds, one run:\n\n", perDay, rounds)
	fmt.Println("| refresh | rwc apply | ÷ whole window | refresh | ÷ whole window | what rwc did |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | --- |")
	w, t := median(wall[1]), median(inTx[1])
	for i, k := range kinds {
		fmt.Printf("| %s | %s | %.2f× | %s | %.2f× | %s |\n", k.name, median(wall[i]).Round(time.Millisecond), ratio(median(wall[i]), w),
			median(inTx[i]).Round(time.Millisecond), ratio(median(inTx[i]), t), counts(actions[i]))
	}
	fmt.Println("goal: the incremental refresh ≤ 0.25× the whole window's")
	return nil
}

// reader reads in a loop on a connection of its own, timing each read.
type reader struct {
	mu    sync.Mutex
	reads []time.Duration
	done  chan struct{}
	quit  chan struct{}
}

func startReader(ctx context.Context, db *sql.DB, q string) *reader {
	rd := &reader{done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(rd.done)
		conn, err := db.Conn(ctx)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			select {
			case <-rd.quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
			start := time.Now()
			var n int64
			if err := conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
				fmt.Fprintln(os.Stderr, "bench: reader:", err)
				return
			}
			rd.mu.Lock()
			rd.reads = append(rd.reads, time.Since(start))
			rd.mu.Unlock()
		}
	}()
	return rd
}

// snapshot returns the reads so far and starts a new list.
func (rd *reader) snapshot() []time.Duration {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	out := rd.reads
	rd.reads = nil
	return out
}

func (rd *reader) stop() []time.Duration {
	close(rd.quit)
	<-rd.done
	return rd.snapshot()
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// benchHistory measures what a target's history costs a 7-day window's
// refresh (issue #15): flows over the same sources, a plain target
// (indexed on the date, rwc's default) and one partitioned by day for
// each of levels, each target holding that many rows of history, all
// refreshed whole (the dimension touched) round by round, in turns, so
// that the machine's load falls on every level alike. The history is not
// made by refreshes: it is generated straight into the targets (INSERT …
// SELECT generate_series, over the 358 days before the window; the
// partitioned targets' partitions for those days made by hand first, with
// rwc's names), as DML into a target is kept by later refreshes. Then, on
// the partitioned target of the last level: 100 consecutive refreshes with
// autovacuum off and a reader's waits during their swaps, and an
// incremental refresh of one changed day against the whole window; on the
// plain target of the last level, 100 consecutive refreshes with
// autovacuum off, rwc's own VACUUM all that keeps it healthy, then 100
// with autovacuum on, which keeps it healthy at rwc's threshold (issue #17).
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
	var targets []*histTarget
	for _, n := range levels {
		for _, partitioned := range []bool{false, true} {
			t := &histTarget{rows: n, partitioned: partitioned, actions: map[string]int{}}
			t.flow = fmt.Sprintf("hist_plain_%d", n)
			if partitioned {
				t.flow = fmt.Sprintf("hist_part_%d", n)
			}
			if err := t.setUp(ctx, db, dsn, tmp, rwcBin); err != nil {
				return err
			}
			targets = append(targets, t)
		}
	}
	touchDim := func() error {
		_, err := db.ExecContext(ctx, `UPDATE store_dim SET region = region WHERE store_id = 1`)
		return err
	}
	for r := 0; r < rounds; r++ {
		if err := touchDim(); err != nil {
			return err
		}
		for i := range targets {
			t := targets[(r+i)%len(targets)] // who goes first turns round by round
			if err := t.refresh(ctx, db); err != nil {
				return err
			}
		}
	}
	for _, t := range targets {
		var err error
		if t.dead, err = deadInWindow(ctx, db, t.flow); err != nil {
			return err
		}
	}
	fmt.Printf("\nA 7-day window refreshed whole (the dimension touched) on targets holding history, median of %d rounds each, all targets in turns, one run\n", rounds)
	fmt.Println("(refresh: the refresh transaction as the event log records it; rwc apply: the whole process, VACUUM when due included; dead: dead row versions in the target after the last round, pgstattuple):")
	fmt.Println()
	fmt.Println("| history rows | plain: refresh | ÷ first | rwc apply | ÷ first | dead | partitioned: refresh | ÷ first | rwc apply | ÷ first | dead | partitioned ÷ plain (refresh) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	p0, q0 := targets[0], targets[1]
	for i := 0; i+1 < len(targets); i += 2 {
		p, q := targets[i], targets[i+1]
		fmt.Printf("| %d | %s | %.2f× | %s | %.2f× | %d | %s | %.2f× | %s | %.2f× | %d | %.2f× |\n", p.rows,
			median(p.inTx).Round(time.Millisecond), ratio(median(p.inTx), median(p0.inTx)), median(p.wall).Round(time.Millisecond), ratio(median(p.wall), median(p0.wall)), p.dead,
			median(q.inTx).Round(time.Millisecond), ratio(median(q.inTx), median(q0.inTx)), median(q.wall).Round(time.Millisecond), ratio(median(q.wall), median(q0.wall)), q.dead,
			ratio(median(q.inTx), median(p.inTx)))
	}
	last := targets[len(targets)-1]
	fmt.Printf("\nrwc's refreshes: plain %s; partitioned %s\n", counts(targets[len(targets)-2].actions), counts(last.actions))
	fmt.Println("goals: 32M ≤ 1.3× 1M for both; partitioned ≤ 0.8× plain; dead rows left by the partitioned refresh = 0")

	if err := benchRepeatPartitioned(ctx, db, last, touchDim, 100); err != nil {
		return err
	}
	if err := benchIncrementalPartitioned(ctx, db, last, touchDim, rounds, perDay); err != nil {
		return err
	}
	plain := targets[len(targets)-2]
	if err := benchRepeatPlain(ctx, db, plain, touchDim, 100, map[string]string{"autovacuum": "off"}, "autovacuum off"); err != nil {
		return err
	}
	// Back to back, a refresh every few hundred milliseconds: autovacuum
	// looks at the database every second, as often against the refreshes
	// as its default minute against a flow refreshed every few minutes.
	return benchRepeatPlain(ctx, db, plain, touchDim, 100, map[string]string{"autovacuum": "on", "autovacuum_naptime": "1s"},
		"autovacuum on (autovacuum_naptime = 1s)")
}

// histTarget is one flow of benchHistory and what its refreshes measured.
type histTarget struct {
	flow        string
	rows        int
	partitioned bool
	apply       func() (string, error)
	inTx, wall  []time.Duration
	locks       []time.Duration // the swap's ACCESS EXCLUSIVE, as rwc logs it
	actions     map[string]int
	dead        int64
}

// setUp writes the flow's spec (the main benchmark's sales_enriched, its
// window the 7 days to today), creates its target with a first apply, and
// fills it with its history.
func (t *histTarget) setUp(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin string) error {
	partitioning := ""
	if t.partitioned {
		partitioning = "    partitioning: {by: date, interval: day}\n"
	}
	var err error
	if t.apply, err = historyFlow(dsn, tmp, rwcBin, t.flow, partitioning); err != nil {
		return err
	}
	if _, err := t.apply(); err != nil {
		return err
	}
	if t.partitioned {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DO $$ BEGIN
			FOR d IN 7..364 LOOP
				EXECUTE format('CREATE TABLE %[1]s_p%%s PARTITION OF %[1]s FOR VALUES FROM (%%L) TO (%%L)',
					to_char(current_date - d, 'YYYYMMDD'), current_date - d, current_date - d + 1);
			END LOOP; END $$`, t.flow)); err != nil {
			return err
		}
	}
	fmt.Printf("history: %d rows into %s…\n", t.rows, t.flow)
	start := time.Now()
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s
		SELECT i, current_date - 7 - (i %% 358)::int, 'store ' || (1 + i %% 1000), 'emea', (i %% 10000) / 100.0
		FROM generate_series(1, %d) i`, t.flow, t.rows)); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+t.flow); err != nil {
		return err
	}
	fmt.Printf("  (%s)\n", time.Since(start).Round(time.Second))
	return nil
}

// refresh applies the flow once and records what it took.
func (t *histTarget) refresh(ctx context.Context, db *sql.DB) error {
	begin := time.Now()
	out, err := t.apply()
	if err != nil {
		return err
	}
	t.wall = append(t.wall, time.Since(begin))
	ev, err := lastEvent(ctx, db, t.flow)
	if err != nil {
		return err
	}
	t.inTx = append(t.inTx, ev.duration)
	t.actions[ev.what()]++
	if m := lockHeld.FindStringSubmatch(out); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			t.locks = append(t.locks, d)
		}
	}
	return nil
}

// lockHeld reads rwc's log line of a swap.
var lockHeld = regexp.MustCompile(`holding ACCESS EXCLUSIVE on the target for (\S+) `)

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// historyFlow writes the spec of one flow (a copy of the main benchmark's
// sales_enriched, its window the 7 days to today, capturing by triggers:
// how a flow refreshed often is set up) and returns how to apply it, with
// rwc's output.
func historyFlow(dsn, tmp, rwcBin, flow, partitioning string) (func() (string, error), error) {
	s := strings.Replace(strings.Replace(spec, "sales_enriched", flow, 1), "date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -6)", 1)
	return applier(tmp, rwcBin, dsn, flow, strings.Replace(s, "    query: |", partitioning+"    capture: triggers\n    query: |", 1))
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
func benchRepeatPartitioned(ctx context.Context, db *sql.DB, t *histTarget, touchDim func() error, n int) error {
	var idle, during []time.Duration
	rep, err := repeatRefreshes(ctx, db, t, touchDim, n, func(refresh func() error) error {
		rd := startReader(ctx, db, fmt.Sprintf(`SELECT count(*) FROM %s WHERE date = current_date - 3`, t.flow))
		time.Sleep(2 * time.Second)
		idle = rd.snapshot()
		err := refresh()
		during = rd.stop()
		return err
	})
	if err != nil {
		return err
	}
	dead, err := deadInWindow(ctx, db, t.flow)
	if err != nil {
		return err
	}
	fmt.Printf("\npartitioned target: %d whole-window refreshes in a row, autovacuum off (%s), the last against the first:\n\n", n, counts(rep.actions))
	rep.print()
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
	fmt.Printf("rwc's own count of the swap's ACCESS EXCLUSIVE (from taking it to the end of the commit), %d refreshes: median %s, 99th percentile %s, longest %s\n",
		len(t.locks), median(t.locks).Round(10*time.Microsecond), percentile(t.locks, 0.99).Round(10*time.Microsecond), percentile(t.locks, 1).Round(10*time.Microsecond))
	return nil
}

// benchRepeatPlain runs n whole-window refreshes of the plain target in a
// row (issue #17), under the server settings set: with autovacuum off,
// rwc's own VACUUM, when due, is all that keeps it healthy; with it on,
// autovacuum does, at the threshold rwc gave the target. The 100th
// against the first, the VACUUMs among them, and the table's size (with
// its indexes) before and after.
func benchRepeatPlain(ctx context.Context, db *sql.DB, t *histTarget, touchDim func() error, n int, set map[string]string, how string) error {
	size := func() (int64, error) {
		var b int64
		err := db.QueryRowContext(ctx, `SELECT pg_total_relation_size($1::regclass)`, t.flow).Scan(&b)
		return b, err
	}
	before, err := size()
	if err != nil {
		return err
	}
	rep, err := repeatWith(ctx, db, t, touchDim, n, set, func(refresh func() error) error { return refresh() })
	if err != nil {
		return err
	}
	after, err := size()
	if err != nil {
		return err
	}
	fmt.Printf("\nplain target (%d rows of history): %d whole-window refreshes in a row, %s (%s), the last against the first:\n\n", t.rows, n, how, counts(rep.actions))
	rep.print()
	fmt.Printf("\nVACUUMs of the target among them: %d by rwc, %d by autovacuum; the slowest rwc apply: %s; the table with its indexes: %.1f MB before, %.1f MB after (%.3f×)\n",
		rep.vacuums, rep.autovacuums, percentile(rep.wall, 1).Round(time.Millisecond), float64(before)/1e6, float64(after)/1e6, float64(after)/float64(before))
	fmt.Println("goals: the 100th ≤ 1.1× the first; the size flat")
	return nil
}

// repeated is what repeatRefreshes measured.
type repeated struct {
	wall, inTx  []time.Duration
	actions     map[string]int
	vacuums     int64 // of the target, by rwc (or by hand)
	autovacuums int64 // of the target, by autovacuum
}

// repeatRefreshes runs n whole-window refreshes of t in a row with
// autovacuum off, inside around (which may measure beside them).
func repeatRefreshes(ctx context.Context, db *sql.DB, t *histTarget, touchDim func() error, n int, around func(func() error) error) (repeated, error) {
	return repeatWith(ctx, db, t, touchDim, n, map[string]string{"autovacuum": "off"}, around)
}

// repeatWith runs n whole-window refreshes of t in a row under the server
// settings set (reset after), inside around.
func repeatWith(ctx context.Context, db *sql.DB, t *histTarget, touchDim func() error, n int, set map[string]string, around func(func() error) error) (repeated, error) {
	for name, value := range set {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`ALTER SYSTEM SET %s = %s`, name, pq.QuoteLiteral(value))); err != nil {
			return repeated{}, err
		}
	}
	if _, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`); err != nil {
		return repeated{}, err
	}
	defer func() {
		for name := range set {
			db.ExecContext(ctx, `ALTER SYSTEM RESET `+name)
		}
		db.ExecContext(ctx, `SELECT pg_reload_conf()`)
	}()
	vacuumed := func() (v, av int64, err error) {
		err = db.QueryRowContext(ctx, `SELECT pg_stat_get_vacuum_count($1::regclass), pg_stat_get_autovacuum_count($1::regclass)`, t.flow).Scan(&v, &av)
		return v, av, err
	}
	v0, av0, err := vacuumed()
	if err != nil {
		return repeated{}, err
	}
	t.wall, t.inTx, t.locks, t.actions = nil, nil, nil, map[string]int{}
	err = around(func() error {
		for i := 0; i < n; i++ {
			if err := touchDim(); err != nil {
				return err
			}
			if err := t.refresh(ctx, db); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return repeated{}, err
	}
	// The statistics collector reports what a backend did when it goes idle.
	time.Sleep(time.Second)
	v1, av1, err := vacuumed()
	return repeated{wall: t.wall, inTx: t.inTx, actions: t.actions, vacuums: v1 - v0, autovacuums: av1 - av0}, err
}

func (r repeated) print() {
	n, k := len(r.wall), 5
	fmt.Println("| | first | last | last ÷ first | median of last 5 ÷ median of first 5 | trend: fitted last ÷ fitted first |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{{"rwc apply", r.wall}, {"refresh transaction", r.inTx}} {
		ds := row.ds
		fmt.Printf("| %s | %s | %s | %.2f× | %.2f× | %.2f× |\n", row.name, ds[0].Round(time.Millisecond), ds[n-1].Round(time.Millisecond),
			ratio(ds[n-1], ds[0]), ratio(median(ds[n-k:]), median(ds[:k])), trend(ds))
	}
	fmt.Println("\n(trend: the least-squares line through all the refreshes, its value at the last over its value at the first: one slow or fast refresh at either end moves it little)")
}

// trend fits a least-squares line through ds (by position) and returns its
// value at the last over its value at the first.
func trend(ds []time.Duration) float64 {
	n := float64(len(ds))
	var sx, sy, sxx, sxy float64
	for i, d := range ds {
		x, y := float64(i), float64(d)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	first := (sy - slope*sx) / n
	return (first + slope*(n-1)) / first
}

// benchIncrementalPartitioned compares, on the partitioned target, an
// incremental refresh after rows changed in one day of the 7 (one
// partition swapped) with a whole-window refresh (the dimension touched:
// 7 swapped), round by round.
func benchIncrementalPartitioned(ctx context.Context, db *sql.DB, t *histTarget, touchDim func() error, rounds, perDay int) error {
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
			if _, err := t.apply(); err != nil {
				return err
			}
			wall[i] = append(wall[i], time.Since(start))
			ev, err := lastEvent(ctx, db, t.flow)
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
	w, tx := median(wall[1]), median(inTx[1])
	for i, k := range kinds {
		fmt.Printf("| %s | %s | %.2f× | %s | %.2f× | %s |\n", k.name, median(wall[i]).Round(time.Millisecond), ratio(median(wall[i]), w),
			median(inTx[i]).Round(time.Millisecond), ratio(median(inTx[i]), tx), counts(actions[i]))
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

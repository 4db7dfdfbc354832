package run_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// partSpec is dailySpec with a partitioned target: one partition a day.
var partSpec = strings.Replace(dailySpec, "    query: |", "    partitioning: {by: d, interval: day}\n    query: |", 1)

// partitions lists the target's partitions with their bounds, by name.
func (e *env) partitions(table string) []string {
	return e.rows(`SELECT c.relname || ': ' || pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = '` + table + `'::regclass ORDER BY 1`)
}

// keyedIndexes lists a table's indexes as "primary attached", attached
// the number of parent indexes it is attached to.
func (e *env) keyedIndexes(table string) []string {
	return e.rows(`SELECT i.indisprimary::text || ' ' || (SELECT count(*) FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
		FROM pg_index i WHERE i.indrelid = '` + table + `'::regclass ORDER BY 1`)
}

// primaryKey is the columns of a table's valid primary key ("" none).
func (e *env) primaryKey(table string) string {
	return e.value(`SELECT coalesce(string_agg(a.attname, ',' ORDER BY a.attnum), '') FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = '` + table + `'::regclass AND i.indisprimary AND i.indisvalid`)
}

// oidOf is a table's oid, as text ("" when it does not exist).
func (e *env) oidOf(table string) string {
	return e.value(`SELECT coalesce(to_regclass($1)::oid::text, '')`, table)
}

// The life of a partitioned target: created partitioned, with its
// partitions made ahead of the window; a refresh swaps the window's
// partitions in (new tables: nothing deleted, nothing dead); the next day
// adds the day's partition and keeps the one that left the window; an
// incremental refresh swaps only the changed day's partition.
func TestPartitionLifecycle(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	res := refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, res, compile.ActionCreate, compile.ReasonFirstRefresh)
	if kind := e.value(`SELECT relkind::text FROM pg_class WHERE oid = 't'::regclass`); kind != "p" {
		t.Fatalf("the target's relkind is %s, want p (partitioned)", kind)
	}
	want := []string{
		`("t_p20260308: FOR VALUES FROM ('2026-03-08') TO ('2026-03-09')")`,
		`("t_p20260309: FOR VALUES FROM ('2026-03-09') TO ('2026-03-10')")`,
		`("t_p20260310: FOR VALUES FROM ('2026-03-10') TO ('2026-03-11')")`,
		`("t_p20260311: FOR VALUES FROM ('2026-03-11') TO ('2026-03-12')")`,
		`("t_p20260312: FOR VALUES FROM ('2026-03-12') TO ('2026-03-13')")`,
	}
	if got := e.partitions("t"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("partitions after the first refresh:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := e.count(`SELECT count(*) FROM t`); got != 6 || res.RowsInserted != 6 {
		t.Fatalf("%d rows (%d inserted), want 6", got, res.RowsInserted)
	}
	// Every partition of the window carries the target's index.
	if n := e.count(`SELECT count(*) FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indrelid WHERE h.inhparent = 't'::regclass`); n != 5 {
		t.Errorf("%d partition indexes, want 5 (one a partition)", n)
	}

	// The next day: the window moves on; 03-08 stays, untouched.
	day8 := e.oidOf("t_p20260308")
	e.exec(`INSERT INTO ev VALUES ('2026-03-11', 'a', 11)`)
	res = refresh(t, e.runner(now0.Add(24*time.Hour)), reqWindow(f))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if e.oidOf("t_p20260308") != day8 {
		t.Errorf("the partition that left the window was replaced")
	}
	if e.oidOf("t_p20260313") == "" {
		t.Errorf("no partition made ahead for 2026-03-13: %v", e.partitions("t"))
	}
	if got := e.count(`SELECT count(*) FROM t`); got != 7 {
		t.Errorf("%d rows after the second day, want 7", got)
	}

	// One day changes: only its partition is swapped.
	day9, day10 := e.oidOf("t_p20260309"), e.oidOf("t_p20260310")
	e.exec(`UPDATE ev SET v = v + 100 WHERE d = '2026-03-10'`)
	res = refresh(t, e.runner(now0.Add(24*time.Hour)), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if strings.Join(res.Partitions, ",") != "2026-03-10" {
		t.Errorf("partitions %v, want [2026-03-10]", res.Partitions)
	}
	if e.oidOf("t_p20260309") != day9 || e.oidOf("t_p20260310") == day10 {
		t.Errorf("the incremental refresh should swap 2026-03-10's partition only (09: %s → %s, 10: %s → %s)",
			day9, e.oidOf("t_p20260309"), day10, e.oidOf("t_p20260310"))
	}
	if got := e.value(`SELECT string_agg(v::text, ',' ORDER BY k) FROM t WHERE d = '2026-03-10'`); got != "110,200" {
		t.Errorf("2026-03-10 holds %s, want 110,200", got)
	}
	// Nothing changed: nothing swapped.
	res = refresh(t, e.runner(now0.Add(24*time.Hour)), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if len(res.Partitions) != 0 || e.oidOf("t_p20260309") != day9 {
		t.Errorf("an unchanged refresh swapped %v", res.Partitions)
	}
}

// A backfill into days before the first partition creates their
// partitions first, and fills them; beside a DEFAULT partition, in a
// transaction of their own before the backfill's.
func TestPartitionBackfillCreatesPartitions(t *testing.T) {
	t.Parallel()
	for _, withDefault := range []bool{false, true} {
		t.Run(fmt.Sprintf("DEFAULT partition %v", withDefault), func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
			refresh(t, e.runner(now0), reqWindow(f))
			if withDefault {
				e.exec(`CREATE TABLE t_default PARTITION OF t DEFAULT`)
			}
			var log strings.Builder
			r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 10 * time.Second, Log: &log})
			res := refresh(t, r, run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-01') && d <= date('2026-03-03')")})
			checkOutcome(t, res, compile.ActionBackfill, compile.ReasonBackfill)
			for _, p := range []string{"t_p20260301", "t_p20260302", "t_p20260303"} {
				if e.oidOf(p) == "" {
					t.Errorf("no partition %s after the backfill: %v", p, e.partitions("t"))
				}
			}
			if got := e.count(`SELECT count(*) FROM t WHERE d <= '2026-03-03'`); got != 6 {
				t.Errorf("%d backfilled rows, want 6", got)
			}
			if first := strings.Contains(log.String(), "committed before it"); first != withDefault {
				t.Errorf("partitions made in a transaction of their own: %v, want %v:\n%s", first, withDefault, log.String())
			}
			// The next window refresh finds the target as rwc left it.
			res = refresh(t, e.runner(now0), reqWindow(f))
			checkOutcome(t, res, compile.ActionIncremental)
		})
	}
}

// A backfill swaps in the whole partitions of its range that lie outside
// the window: new tables, so nothing deleted and nothing dead; inside the
// window, which it fingerprints before any swap, it deletes and inserts.
// Either way the next window refresh finds the target as rwc left it.
func TestPartitionBackfillSwapsOutsideWindow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f)) // the window: 03-08 to 03-10
	refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-01') && d <= date('2026-03-07')")})
	oids := map[string]string{}
	for _, p := range []string{"t_p20260305", "t_p20260306", "t_p20260309"} {
		oids[p] = e.oidOf(p)
	}
	e.exec(`UPDATE ev SET v = v + 1000 WHERE d BETWEEN '2026-03-05' AND '2026-03-07'`)
	res := refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-05') && d <= date('2026-03-09')")})
	checkOutcome(t, res, compile.ActionBackfill, compile.ReasonBackfill)
	// New tables (another oid), which hold no dead rows: the statistics'
	// dead-row count, reported late, could not tell.
	if e.oidOf("t_p20260305") == oids["t_p20260305"] || e.oidOf("t_p20260306") == oids["t_p20260306"] {
		t.Errorf("the partitions outside the window were not swapped in: %v", e.partitions("t"))
	}
	if e.oidOf("t_p20260309") != oids["t_p20260309"] {
		t.Errorf("a partition inside the window was swapped")
	}
	if got := e.value(`SELECT string_agg(d || ':' || v, ',' ORDER BY d, k) FROM t WHERE d BETWEEN '2026-03-05' AND '2026-03-09'`); got != "2026-03-05:1005,2026-03-05:1050,2026-03-06:1006,2026-03-06:1060,2026-03-07:1007,2026-03-07:1070,2026-03-08:8,2026-03-08:80,2026-03-09:9,2026-03-09:90" {
		t.Errorf("after the backfill: %s", got)
	}
	if res.RowsDeleted != 10 || res.RowsInserted != 10 {
		t.Errorf("the backfill deleted %d and inserted %d rows, want 10 and 10", res.RowsDeleted, res.RowsInserted)
	}
	res = refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if len(res.Partitions) != 0 {
		t.Errorf("the refresh after the backfill recomputed %v: it took the backfill's writes for changes", res.Partitions)
	}
}

// A swapped partition brings its primary key with it: the staging table's
// unique index backs a key of its own, which ATTACH attaches to the
// parent's, so the swap builds no index under its lock and leaves each
// partition with the parent's indexes, once each.
func TestPartitionPrimaryKeySwap(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := strings.Replace(partSpec, "    query: |", "    primary_key: [d, k]\n    query: |", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	parent := e.rows(`SELECT i.indisprimary::text FROM pg_index i WHERE i.indrelid = 't'::regclass ORDER BY 1`)
	for _, p := range []string{"t_p20260308", "t_p20260309"} {
		got := e.keyedIndexes(p)
		if len(got) != len(parent) || !slices.Contains(got, "(\"true 1\")") {
			t.Errorf("%s has indexes %v (primary, attached), want one attached each of the parent's %v", p, got, parent)
		}
	}
}

// A window that cuts a partition (three days of monthly partitions)
// refreshes that partition with DELETE and INSERT, keeping its rows
// outside the window; a partition wholly inside is swapped.
func TestPartitionCutBoundary(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	monthly := strings.Replace(partSpec, "interval: day", "interval: month", 1)
	f := flow(t, map[string]string{"p.yaml": monthly}, "t")
	at := now0
	s := explain(t, e, f, at)
	if s.Lock != "" || len(s.Swaps) != 0 || !strings.HasPrefix(s.Delete, "DELETE") {
		t.Fatalf("a window cutting its month should delete and insert, not swap: %+v", s)
	}
	refresh(t, e.runner(at), reqWindow(f))
	march := e.oidOf("t_p20260301")
	e.exec(`INSERT INTO t VALUES ('2026-03-02', 'h', 1)`) // history inside the cut partition
	e.exec(`UPDATE ev SET v = 0 WHERE d = '2026-03-09'`)
	refresh(t, e.runner(at), reqWindow(f))
	if e.oidOf("t_p20260301") != march {
		t.Errorf("the cut partition was swapped")
	}
	if got := e.count(`SELECT count(*) FROM t WHERE d = '2026-03-02'`); got != 1 {
		t.Errorf("the history row in the cut partition is gone")
	}
	if got := e.value(`SELECT string_agg(v::text, ',' ORDER BY k) FROM t WHERE d = '2026-03-09'`); got != "0,0" {
		t.Errorf("2026-03-09 holds %s, want 0,0", got)
	}
	// A window holding all of February and March: February is swapped
	// whole, March too (the refresh's month; April is made ahead).
	whole := strings.Replace(monthly, "d >= date_add(current_date(), -2)", "d >= date('2026-02-01')", 1)
	g := flow(t, map[string]string{"p.yaml": whole}, "t")
	s = explain(t, e, g, at)
	if len(s.Swaps) != 2 || s.Swaps[0].From != "2026-02-01" || s.Swaps[1].From != "2026-03-01" {
		t.Fatalf("swaps %+v, want February and March", s.Swaps)
	}
}

// An incremental refresh that swaps a month's partition counts its rows
// per day (RETURNING), not as one value, so that the next refresh knows
// them for its own write and has nothing to do.
func TestPartitionIncrementalSwapOfAMonth(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	monthly := strings.Replace(strings.Replace(partSpec, "interval: day", "interval: month", 1), "d >= date_add(current_date(), -2)", "d >= date('2026-02-01')", 1)
	f := flow(t, map[string]string{"p.yaml": monthly}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	march := e.oidOf("t_p20260301")
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if e.oidOf("t_p20260301") == march || len(res.Swapped) != 1 {
		t.Fatalf("March's partition should be swapped in: swapped %v", res.Swapped)
	}
	res = refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if len(res.Partitions) != 0 {
		t.Errorf("nothing changed since the swap, yet the refresh recomputed %v", res.Partitions)
	}
}

// explain is the statements a window refresh of f would send at at.
func explain(t *testing.T, e *env, f *compile.Flow, at time.Time) compile.Statements {
	t.Helper()
	ex, err := run.Explain(context.Background(), e.db, reqWindow(f), run.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	return ex.Writes[len(ex.Writes)-1]
}

// rwc does not convert a plain target into a partitioned one (nor back):
// it refuses, saying how, and changes nothing.
func TestPartitionAdoptPlainRefused(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	plain := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(plain))
	parted := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	before := e.rows(`SELECT d || k || v FROM t ORDER BY 1`)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(parted))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "exists as a plain table") || !strings.Contains(res.Err.Error(), "RENAME TO t_history") {
		t.Fatalf("want a refusal saying how to adopt the table, got %v", res.Err)
	}
	if after := e.rows(`SELECT d || k || v FROM t ORDER BY 1`); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("the refused refresh changed the target")
	}
	// The documented way (docs/concepts.md#adopting-a-plain-target):
	// rename aside, refresh (created partitioned), attach the history as
	// one partition.
	e.exec(`INSERT INTO t VALUES ('2026-03-01', 'h', 1)`)
	e.exec(`ALTER TABLE t RENAME TO t_history`)
	res = refresh(t, e.runner(now0), reqWindow(parted))
	checkOutcome(t, res, compile.ActionCreate, compile.ReasonFirstRefresh)
	e.exec(`DELETE FROM t_history WHERE d >= '2026-03-08' OR d IS NULL;
		ALTER TABLE t_history ADD CONSTRAINT t_history_bound CHECK (d IS NOT NULL AND d < '2026-03-08');
		ALTER TABLE t ATTACH PARTITION t_history FOR VALUES FROM (MINVALUE) TO ('2026-03-08')`)
	if got := e.count(`SELECT count(*) FROM t WHERE d = '2026-03-01'`); got != 1 {
		t.Errorf("history not attached")
	}
	// The next days refresh as usual; a backfill into the history
	// partition deletes and inserts there, and creates no partition.
	res = refresh(t, e.runner(now0.Add(24*time.Hour)), reqWindow(parted))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	res = refresh(t, e.runner(now0), run.Request{Flow: parted, Mode: run.Override, Where: where(t, parted, "d >= date('2026-03-02') && d <= date('2026-03-03')")})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := e.count(`SELECT count(*) FROM t_history WHERE d IN ('2026-03-02', '2026-03-03')`); got != 4 {
		t.Errorf("the backfill into the history partition: %d rows there, want 4", got)
	}
}

// partWhole is wholeSpec partitioned by day, its window bounded (rwc apply
// resolves at the real clock: an open window would reach today).
var partWhole = strings.Replace(strings.Replace(wholeSpec, "    query: |", "    partitioning: {by: d, interval: day}\n    query: |", 1),
	"d >= date('2026-03-05')", "d >= date('2026-03-05') && d <= date('2026-03-12')", 1)

// The plan is what apply sends, for a partitioned target too: the
// partitions it creates, the staging tables, the swap under its lock; and
// the incremental swap of the changed days only, or the whole window's
// swap after a target changed outside rwc (apply first stages the changed
// days, then drops those staging tables and swaps the whole window).
func TestPlanIsWhatApplySendsPartitioned(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	for _, tc := range []struct {
		name, setup string
		spec        string // the planned spec ("": partWhole's)
		action      compile.Action
		partitions  []string
		swaps       int
	}{
		{name: "first create", action: compile.ActionCreate, swaps: 8},
		{name: "incremental, two days", setup: `UPDATE ev SET v = v + 1 WHERE d IN ('2026-03-06', '2026-03-09')`,
			action: compile.ActionIncremental, partitions: []string{"2026-03-06", "2026-03-09"}, swaps: 2},
		{name: "the target changed", setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-06'; UPDATE t SET v = 0 WHERE d = '2026-03-09'`,
			action: compile.ActionRecomputeWindow, swaps: 8},
		{name: "an index added", setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-07'`,
			spec:   strings.Replace(partWhole, "    partitioning:", "    indexes:\n      - columns: [d]\n      - columns: [k, d]\n    partitioning:", 1),
			action: compile.ActionIncremental, partitions: []string{"2026-03-07"}, swaps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			dir := writeSpecs(t, map[string]string{"p.yaml": partWhole})
			if tc.action != compile.ActionCreate {
				mustApply(t, e, dir)
			}
			e.exec(tc.setup)
			if tc.spec != "" {
				dir = writeSpecs(t, map[string]string{"p.yaml": tc.spec})
			}
			file := filepath.Join(t.TempDir(), "plan.json")
			if code, out := runRWC(t, e.dsn, "plan", "--out", file, dir); code != 0 && code != 2 {
				t.Fatalf("rwc plan: exit %d:\n%s", code, out)
			}
			fp := readPlanFile(t, file).Flows[0]
			if fp.Action != tc.action || !slices.Equal(fp.Partitions, tc.partitions) {
				t.Fatalf("planned %s %v, partitions %v; want %s %v", fp.Action, fp.Reasons, fp.Partitions, tc.action, tc.partitions)
			}
			swaps := 0
			for _, s := range fp.SQL {
				if strings.Contains(s, "ATTACH PARTITION") && strings.Contains(s, "_s2026") {
					swaps++
				}
			}
			locked := slices.ContainsFunc(fp.SQL, func(s string) bool {
				return strings.HasPrefix(s, `LOCK TABLE ONLY "public"."t", ONLY "public"."t_p2026`) && strings.HasSuffix(s, " IN ACCESS EXCLUSIVE MODE")
			})
			if swaps != tc.swaps || !locked {
				t.Errorf("the plan swaps %d partitions, want %d, under the lock:\n%s", swaps, tc.swaps, strings.Join(fp.SQL, "\n"))
			}
			_, explained := runRWC(t, e.dsn, "refresh", "t", "--explain", "--specs", dir)
			sent := appliedThroughProxy(t, e, file, "")
			for _, stmt := range fp.SQL {
				if !sentOne(sent, stmt) {
					t.Errorf("the plan shows a statement rwc apply did not send:\n%s", stmt)
				}
				// --explain shows the refresh's statements, not the target's creation.
				creation := strings.HasPrefix(stmt, "CREATE SCHEMA") || strings.HasPrefix(stmt, `CREATE TABLE "public"."t" (`) || strings.Contains(stmt, `ON "public"."t" USING`) ||
					strings.Contains(stmt, "INDEX") && !strings.Contains(stmt, "_s2026")
				if !creation && !strings.Contains(explained, stmt+";\n") {
					t.Errorf("rwc refresh --explain does not print the plan's\n%s", stmt)
				}
			}
			if got := e.count(`SELECT count(*) FROM t WHERE d BETWEEN '2026-03-05' AND '2026-03-10'`); got != 12 {
				t.Errorf("the window holds %d rows after the apply, want 12", got)
			}
		})
	}
}

// Rows dated after the partitions made ahead (a window open above) get
// their partitions too: the refresh asks the query which days it yields
// there, first.
func TestPartitionOverflow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`INSERT INTO ev VALUES ('2026-03-25', 'a', 25), ('2026-04-30', 'a', 30)`)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	for _, p := range []string{"t_p20260325", "t_p20260430"} {
		if e.oidOf(p) == "" {
			t.Errorf("no partition %s for the row dated then: %v", p, e.partitions("t"))
		}
	}
	if got := e.count(`SELECT count(*) FROM t`); got != 8 {
		t.Errorf("%d rows, want 8", got)
	}
}

// Readers never see part of a window: a reader loop, reading the window
// through the parent while refreshes swap every partition of it again and
// again, each with new values, sees every day of one refresh or of the
// next, never a mix; the longest it waited is logged (the swap's lock).
func TestPartitionReadersSeeWholeWindows(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = 0`)
	refresh(t, e.runner(now0), reqWindow(f))
	ctx, stop := context.WithCancel(context.Background())
	type read struct {
		n, lo, hi int64
		took      time.Duration
	}
	reads := make(chan read, 1<<16)
	done := make(chan error, 1)
	go func() {
		defer close(reads)
		for ctx.Err() == nil {
			var r read
			start := time.Now()
			err := e.db.QueryRowContext(ctx, `SELECT count(*), min(v), max(v) FROM t WHERE d >= '2026-03-08'`).Scan(&r.n, &r.lo, &r.hi)
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				done <- err
				return
			}
			r.took = time.Since(start)
			reads <- r
		}
		done <- nil
	}()
	for g := 1; g <= 15; g++ {
		e.exec(`UPDATE ev SET v = $1`, g)
		res := refresh(t, e.runner(now0), reqWindow(f))
		if len(res.Swapped) != 3 {
			t.Fatalf("refresh %d swapped %v, want the window's 3 days", g, res.Swapped)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var n int
	var longest time.Duration
	for r := range reads {
		n++
		longest = max(longest, r.took)
		if r.n != 6 || r.lo != r.hi {
			t.Fatalf("a reader saw part of a window: %d rows, v from %d to %d", r.n, r.lo, r.hi)
		}
	}
	if n < 15 {
		t.Fatalf("only %d reads during 15 refreshes", n)
	}
	t.Logf("%d reads, the longest %s", n, longest)
}

// A long reader of a partition the swap does not replace (history, read
// by its own name) neither waits for the swap nor stalls it: the swap
// locks the parent and the partitions it replaces only (LOCK TABLE
// ONLY), not every partition of the target. Locking them all, the swap
// waited for this reader until the lock timeout, and failed.
func TestPartitionSwapLocksOnlyWhatItReplaces(t *testing.T) {
	t.Parallel()
	refreshBesideHistory(t, `SELECT count(*) FROM t_p20260308`)
}

// The target's probe, beside the write, locks the parent alone and the
// partitions it reads, not every partition (compile.Flow.ProbeLocks): a
// session holding a history partition (VACUUM FULL, an index build on it)
// does not stall the refresh, and the probe opens a few partitions, not a
// year of them.
func TestPartitionTargetProbeLocksOnlyWhatItReads(t *testing.T) {
	t.Parallel()
	refreshBesideHistory(t, `LOCK TABLE t_p20260308 IN ACCESS EXCLUSIVE MODE`)
}

// refreshBesideHistory refreshes a day of the window incrementally while
// another session holds lock on a partition that left it, and checks that
// the refresh swapped that day in within its 300 ms lock timeout.
func refreshBesideHistory(t *testing.T, lock string) {
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	next := now0.Add(24 * time.Hour)
	refresh(t, e.runner(next), reqWindow(f)) // 2026-03-08 leaves the window
	_, release := lockHolder(t, e, lock)
	defer release()
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`)
	r := run.New(e.db, run.Options{Now: func() time.Time { return next }, LockTimeout: 300 * time.Millisecond})
	res := refresh(t, r, reqWindow(f))
	if res.Action != compile.ActionIncremental || len(res.Swapped) != 1 || res.Swapped[0] != "2026-03-10" {
		t.Fatalf("%s, swapped %v; want incremental, swapped [2026-03-10]", res.Action, res.Swapped)
	}
}

// A DEFAULT partition is in the swap's lock step: ATTACH scans it under
// ACCESS EXCLUSIVE, and a reader of it would otherwise make the ATTACH
// wait with the parent held from every reader, for up to the lock timeout;
// the lock step's attempts give the parent back between tries.
func TestPartitionSwapLocksTheDefaultPartition(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`CREATE SCHEMA aside; CREATE TABLE aside."t rest" PARTITION OF t DEFAULT`)
	_, release := lockHolder(t, e, `SELECT count(*) FROM aside."t rest"`)
	defer release()
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`)
	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 5 * time.Second})
	done := make(chan run.Result, 1)
	go func() { done <- r.Refresh(context.Background(), reqWindow(f)) }()
	var waiting string
	for i := 0; i < 200 && waiting == ""; i++ {
		time.Sleep(20 * time.Millisecond)
		e.db.QueryRow(`SELECT coalesce(max(left(query, 40)), '') FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND (query LIKE 'LOCK TABLE%' OR query LIKE '%ATTACH PARTITION%')`).Scan(&waiting)
	}
	release()
	if res := <-done; res.Err != nil {
		t.Fatal(res.Err)
	}
	if !strings.HasPrefix(waiting, "LOCK TABLE ONLY") {
		t.Errorf("the swap waited for the DEFAULT partition in %q, want in its lock step (LOCK TABLE ONLY …)", waiting)
	}
}

// besideDefault is a partitioned target refreshed at now0, then given a
// DEFAULT partition, with 2026-03-10's rows changed since: refreshed a
// day later, it makes 2026-03-13's partition and swaps 2026-03-10's.
func besideDefault(t *testing.T) (*env, *compile.Flow) {
	t.Helper()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`CREATE TABLE t_default PARTITION OF t DEFAULT; UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`)
	return e, f
}

// Beside a DEFAULT partition, the partitions a refresh needs are made and
// committed before it: ATTACH PARTITION holds the DEFAULT one (which it
// scans) ACCESS EXCLUSIVE until its transaction commits, and in the
// refresh's own it would keep its readers (any scan of the parent not
// pruned to other partitions) waiting for all of the refresh. Here the
// refresh is held in its swap's lock step, after its write, by a reader of
// a partition it replaces; a reader of the DEFAULT partition gets through
// meanwhile. (It reads it alone: one that read the parent, and so held
// a lock the lock step waits for, would be a deadlock, which PostgreSQL
// breaks by cancelling either.)
func TestDefaultPartitionReadersWaitOnlyForTheSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, f := besideDefault(t)
	e.exec(`INSERT INTO ev VALUES ('2026-03-11', 'a', 11)`)
	_, release := lockHolder(t, e, `SELECT count(*) FROM t_p20260310`)
	defer release()
	next := now0.Add(24 * time.Hour) // 2026-03-11, whose partition is missing
	var log strings.Builder
	r := run.New(e.db, run.Options{Now: func() time.Time { return next }, LockTimeout: 30 * time.Second, Log: &log})
	done := make(chan run.Result, 1)
	go func() { done <- r.Refresh(ctx, reqWindow(f)) }()
	waiting := ""
	for i := 0; i < 500 && waiting == ""; i++ {
		time.Sleep(10 * time.Millisecond)
		e.db.QueryRow(`SELECT coalesce(max(left(query, 15)), '') FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE ONLY%'`).Scan(&waiting)
	}
	if waiting == "" {
		release()
		t.Fatalf("the refresh never waited in its swap's lock step: %v", (<-done).Err)
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	_, err = conn.ExecContext(ctx, `SET lock_timeout = '5s'`)
	if err == nil {
		err = conn.QueryRowContext(ctx, `SELECT count(*) FROM t_default`).Scan(&n)
	}
	release()
	res := <-done
	if err != nil {
		t.Errorf("a reader of the DEFAULT partition, while the refresh waited to swap: %v", err)
	}
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if parts := strings.Join(e.partitions("t"), " "); !strings.Contains(parts, "t_p20260311: FOR VALUES FROM ('2026-03-11') TO ('2026-03-12')") {
		t.Errorf("partitions %v, want t_p20260311 among them", e.partitions("t"))
	}
	if !strings.Contains(log.String(), "created the partitions the refresh needs, committed before it") {
		t.Errorf("the log does not say the partitions were made first:\n%s", log.String())
	}
}

// The partitions to make first are known before the capture: a refresh
// that must make them probes nothing before they are committed, and so
// probes once, not in a first attempt rolled back and then again.
func TestPartitionsFirstBeforeTheCapture(t *testing.T) {
	t.Parallel()
	e, f := besideDefault(t)
	p, r := e.proxiedRunner(now0.Add(24 * time.Hour))
	refresh(t, r, reqWindow(f))
	attached, probed := -1, -1
	for i, b := range p.Log() {
		if attached < 0 && strings.Contains(b.SQL, "ATTACH PARTITION") {
			attached = i
		}
		if probed < 0 && strings.Contains(b.SQL, "hashtidextended") {
			probed = i
		}
	}
	if attached < 0 || probed < attached {
		t.Errorf("the first ATTACH PARTITION was statement %d, the first probe %d: want a probe, after the partitions were made", attached, probed)
	}
}

// A refresh that fails after it made its partitions first (an expectation
// fails here) rolls back its own transaction, and says that the partitions
// stay, empty; the rows are as they were.
func TestFailedRefreshSaysItsPartitionsStay(t *testing.T) {
	t.Parallel()
	e, _ := besideDefault(t)
	rows := e.rows(`SELECT t::text FROM t ORDER BY 1`)
	failing := flow(t, map[string]string{"p.yaml": withExpect(partSpec, "      negative:\n        check: v < 0\n")}, "t")
	res := e.runner(now0.Add(24*time.Hour)).Refresh(context.Background(), reqWindow(failing))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "the refresh was rolled back; the partitions it made (empty), committed before it, stay") {
		t.Errorf("the failed refresh says %v; want that its partitions stay", res.Err)
	}
	if e.oidOf("t_p20260313") == "" {
		t.Errorf("no partition made for 2026-03-13: %v", e.partitions("t"))
	}
	pgtest.SameRows(t, "the target after the failed refresh", e.rows(`SELECT t::text FROM t ORDER BY 1`), rows)
}

// The rows of the partitions a swap replaces are counted beside the
// staging tables' loads, on a connection of their own in the refresh's
// snapshot, and the count is the one the refresh reports.
func TestSwappedRowsCountedBesideTheLoads(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	// Loads long enough (50,000 rows a day) for the count's connection to
	// open and take its locks meanwhile.
	e.exec(`INSERT INTO ev SELECT d::date, 'x' || i, i FROM generate_series(DATE '2026-03-08', DATE '2026-03-10', interval '1 day') d, generate_series(1, 50000) i`)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	p, r := e.proxiedRunner(now0)
	aside := 0
	for range 3 {
		e.exec(`UPDATE ev SET v = v + 1`)
		from := len(p.Log())
		res := refresh(t, r, reqWindow(f))
		if res.RowsDeleted != 150006 || len(res.Swapped) != 3 {
			t.Fatalf("the refresh deleted %d rows, swapping %v; want 150006, three partitions", res.RowsDeleted, res.Swapped)
		}
		loads, count := map[int]bool{}, 0
		for _, b := range p.Log()[from:] {
			switch {
			case strings.HasPrefix(b.SQL, `INSERT INTO "public"."t_s`):
				loads[b.Conn] = true
			case strings.HasPrefix(b.SQL, `SELECT (SELECT count(*) FROM "public"."t_p`):
				count = b.Conn
			}
		}
		if count != 0 && !loads[count] {
			aside++
		}
	}
	if aside == 0 {
		t.Errorf("in three refreshes, the swapped partitions were never counted beside the loads")
	}
}

// What a REPEATABLE READ reader sees: one that read the target before a
// swap keeps its rows (the swap waits for it, in attempts, until the lock
// timeout); one whose snapshot is older than the swap but that reads the
// target only after it sees the swapped partitions empty, as after a
// TRUNCATE (docs/concepts.md, what readers see).
func TestPartitionRepeatableReadReaders(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = v + 1000`)

	early, err := e.db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Rollback()
	var n int64
	if err := early.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 700 * time.Millisecond})
	res := r.Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "lock") {
		t.Fatalf("a swap behind a reader holding the target should give up after the lock timeout, got %v", res.Err)
	}
	early.Rollback()

	late, err := e.db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback()
	if _, err := late.Exec(`SELECT count(*) FROM ev`); err != nil { // the snapshot, without touching t
		t.Fatal(err)
	}
	refresh(t, e.runner(now0), reqWindow(f))
	if err := late.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the older snapshot reads %d rows of the swapped window; PostgreSQL shows it the new partitions, whose rows are after its snapshot: 0 (update the docs if this changed)", n)
	}
}

// Retention is by hand: a partition that left the window, dropped, changes
// nothing for rwc (the next refresh finds nothing to do); one dropped
// inside the window is seen as a change outside rwc, made again and
// refilled.
func TestPartitionRetentionByHand(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": partSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	next := e.runner(now0.Add(48 * time.Hour)) // the window: 03-10 on
	refresh(t, next, reqWindow(f))
	e.exec(`DROP TABLE t_p20260308`)
	res := refresh(t, next, reqWindow(f))
	checkOutcome(t, res, compile.ActionIncremental)
	if len(res.Partitions) != 0 || res.RowsInserted != 0 {
		t.Errorf("dropping a partition outside the window made the refresh write %v", res.Partitions)
	}
	e.exec(`DROP TABLE t_p20260310`)
	res = refresh(t, next, reqWindow(f))
	checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
	if got := e.count(`SELECT count(*) FROM t WHERE d = '2026-03-10'`); got != 2 || e.oidOf("t_p20260310") == "" {
		t.Errorf("the partition dropped inside the window was not made again and refilled: %d rows", got)
	}
}

// An index added to a partitioned target that exists is built without
// locking its readers out: on the parent alone, then on each partition
// concurrently, attached; the next swaps build it on their staging tables.
func TestPartitionIndexAdded(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": partSpec}, "t")))
	withIndex := strings.Replace(partSpec, "    partitioning:", "    indexes:\n      - columns: [d]\n      - columns: [k, d]\n    partitioning:", 1)
	f := flow(t, map[string]string{"p.yaml": withIndex}, "t")
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if strings.Join(res.Swapped, ",") != "2026-03-09" {
		t.Errorf("swapped %v, want 2026-03-09", res.Swapped)
	}
	var parent string
	for _, ix := range f.Indexes() {
		if strings.Join(ix.Columns, ",") == "k,d" {
			parent = ix.Name
		}
	}
	if v := e.value(`SELECT indisvalid::text FROM pg_index WHERE indexrelid = to_regclass($1)`, parent); v != "true" {
		t.Fatalf("the parent's index %s is valid: %s", parent, v)
	}
	// One partition index on (k, d) per partition, attached.
	if n := e.count(`SELECT count(*) FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid WHERE i.inhparent = to_regclass($1)`, parent); n != 5 {
		t.Errorf("%d partitions' indexes attached to %s, want 5", n, parent)
	}
	if n := e.count(`SELECT count(*) FROM pg_indexes WHERE tablename = 't'`); n != 2 {
		t.Errorf("the parent has %d indexes, want 2 (the default one replaced by the declared ones)", n)
	}
}

// A primary key added to a partitioned target that exists is built
// partition by partition (a validated CHECK for its NOT NULL, a unique
// index built concurrently and made the partition's key), then the
// parent's key attaches them: every partition, history included, ends with
// its key attached, and no second index; the next swap keeps it so.
func TestPartitionPrimaryKeyAdded(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": partSpec}, "t")))
	refresh(t, e.runner(now0), run.Request{Flow: flow(t, map[string]string{"p.yaml": partSpec}, "t"), Mode: run.Override, Where: where(t, flow(t, map[string]string{"p.yaml": partSpec}, "t"), "d >= date('2026-03-01') && d <= date('2026-03-03')")})
	keyed := strings.Replace(partSpec, "    partitioning:", "    primary_key: [d, k]\n    partitioning:", 1)
	f := flow(t, map[string]string{"p.yaml": keyed}, "t")
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if v := e.value(`SELECT coalesce((SELECT indisvalid::text FROM pg_index WHERE indrelid = 't'::regclass AND indisprimary), 'none')`); v != "true" {
		t.Fatalf("the parent's primary key: %s, want a valid one", v)
	}
	parts := e.rows(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 't'::regclass ORDER BY 1`)
	for _, p := range parts {
		p = strings.Trim(p, "()")
		got := e.keyedIndexes(p)
		if !slices.Contains(got, "(\"true 1\")") {
			t.Errorf("%s has indexes %v (primary, attached), want its key attached to the parent's", p, got)
		}
	}
	if n := e.count(`SELECT count(*) FROM pg_constraint WHERE conname = 'rwc_primary_key_not_null'`); n != 0 {
		t.Errorf("%d NOT NULL checks left behind", n)
	}
	if got := e.value(`SELECT string_agg(v::text, ',' ORDER BY k) FROM t WHERE d = '2026-03-09'`); got != "10,91" {
		t.Errorf("2026-03-09 holds %s, want 10,91", got)
	}
	// A NULL in the key fails the step that finds it, and changes no row.
	e.exec(`INSERT INTO t_p20260301 VALUES ('2026-03-01', 'z', NULL)`)
	dup := strings.Replace(keyed, "primary_key: [d, k]", "primary_key: [d, k, v]", 1)
	res = e.runner(now0).Refresh(context.Background(), reqWindow(flow(t, map[string]string{"p.yaml": dup}, "t")))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "rows of t_p20260301 hold NULL in the key's columns (d, k, v)") {
		t.Errorf("a NULL in the new key: %v, want the key's build to fail, the partition named", res.Err)
	}
	// The key it replaces is still there, and the next apply, once the
	// row is fixed, makes the new one.
	if v := e.primaryKey("t"); v != "d,k" {
		t.Errorf("after the failed change the parent's key is on %q, want the old one (d,k)", v)
	}
	e.exec(`UPDATE t_p20260301 SET v = 0 WHERE v IS NULL`)
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dup}, "t")))
	if v := e.primaryKey("t"); v != "d,k,v" {
		t.Errorf("after the fix the parent's key is on %q, want d,k,v", v)
	}
	if got := e.count(`SELECT count(*) FROM t`); got != 13 {
		t.Errorf("%d rows after the failed key, want 13", got)
	}
}

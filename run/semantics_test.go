package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// at returns the refresh time n days after now0 (negative: before).
func at(days int) time.Time { return now0.AddDate(0, 0, days) }

// fillFromDay3 refreshes t at 2026-03-05 (window d >= 03-03) and then at
// now0 (window d >= 03-08), so the target holds 03-03..03-10 and the days
// 03-03..03-07 have left the window.
func (e *env) fillFromDay3(f *flowT) {
	e.t.Helper()
	refresh(e.t, e.runner(at(-5)), reqWindow(f))
	refresh(e.t, e.runner(now0), reqWindow(f))
	if n := e.count(`SELECT count(*) FROM t`); n != 16 {
		e.t.Fatalf("setup: target has %d rows, want 16 (2026-03-03..10, two a day)", n)
	}
}

// Only the rows in the window are replaced: a change to the source inside
// the window shows in the target, a change outside does not. Both for a
// query rwc pushes the window into and for one it cannot (LIMIT), where the
// outer WHERE alone selects the window.
func TestOnlyWindowRowsReplaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query string
		reasons     []compile.Reason
	}{
		{"pushed", "SELECT d, k, v FROM ev", nil},
		{"not pushed", "SELECT d, k, v FROM ev LIMIT 1000000", []compile.Reason{compile.ReasonCannotPushPredicate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := flow(t, map[string]string{"p.yaml": strings.Replace(dailySpec, "SELECT d, k, v FROM ev", tc.query, 1)}, "t")
			r := e.runner(now0)
			if s := statements(t, f, now0); (len(s.PushedTo) > 0) != (tc.name == "pushed") {
				t.Fatalf("setup: pushed to %v", s.PushedTo)
			}
			e.fillFromDay3(f)

			e.exec(`CREATE TABLE before AS SELECT * FROM t`)
			e.exec(`UPDATE ev SET v = v + 1000;
				DELETE FROM ev WHERE (d, k) IN (('2026-03-09', 'a'), ('2026-03-04', 'b'));
				INSERT INTO ev VALUES ('2026-03-10', 'c', 7), ('2026-03-04', 'c', 7)`)
			res := refresh(t, r, reqWindow(f))
			if tc.reasons == nil {
				// Every day of the window changed (v + 1000 everywhere):
				// an incremental refresh recomputes all three.
				checkOutcome(t, res, compile.ActionIncremental)
				pgtest.SameRows(t, "partitions recomputed", res.Partitions, []string{"2026-03-08", "2026-03-09", "2026-03-10"})
			} else {
				checkOutcome(t, res, compile.ActionRecomputeWindow, tc.reasons...)
			}
			if res.RowsDeleted != 6 || res.RowsInserted != 6 {
				t.Errorf("deleted %d, inserted %d; want 6 and 6", res.RowsDeleted, res.RowsInserted)
			}
			pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`
				SELECT * FROM before WHERE d < '2026-03-08' UNION ALL SELECT * FROM ev WHERE d >= '2026-03-08'`))
			// Spelled out, in case the expectation query above is wrong too.
			pgtest.SameRows(t, "target on 2026-03-04 and 2026-03-09", e.rows(`SELECT * FROM t WHERE d IN ('2026-03-04', '2026-03-09')`),
				[]string{"(2026-03-04,a,4)", "(2026-03-04,b,40)", "(2026-03-09,b,1090)"})
			pgtest.SameRows(t, "rows of k c", e.rows(`SELECT * FROM t WHERE k = 'c'`), []string{"(2026-03-10,c,7)"})

			// A change to one day of the window (and one outside it):
			// incremental refreshes recompute that day alone.
			e.exec(`DROP TABLE before; CREATE TABLE before AS SELECT * FROM t`)
			e.exec(`UPDATE ev SET v = -v WHERE d IN ('2026-03-09', '2026-03-05')`)
			res = refresh(t, r, reqWindow(f))
			if tc.reasons == nil {
				checkOutcome(t, res, compile.ActionIncremental)
				pgtest.SameRows(t, "partitions recomputed", res.Partitions, []string{"2026-03-09"})
				if res.RowsDeleted != 1 || res.RowsInserted != 1 {
					t.Errorf("deleted %d, inserted %d; want 1 and 1 (03-09 has one row)", res.RowsDeleted, res.RowsInserted)
				}
			} else {
				checkOutcome(t, res, compile.ActionRecomputeWindow, tc.reasons...)
			}
			pgtest.SameRows(t, "target after a change to one day", e.rows(`SELECT * FROM t`), e.rows(`
				SELECT * FROM before WHERE d < '2026-03-08' UNION ALL SELECT * FROM ev WHERE d >= '2026-03-08'`))
		})
	}
}

// Renaming a dimension value rewrites only the window: older facts keep the
// name they had when they left it.
func TestDimensionRenameRewritesOnlyWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE products (product_id int PRIMARY KEY, name text);
		INSERT INTO products VALUES (1, 'apple'), (2, 'pear');
		CREATE TABLE sales (d date, product_id int, qty int);
		INSERT INTO sales SELECT d::date, p, 1 FROM generate_series(DATE '2026-03-01', DATE '2026-03-10', interval '1 day') d, generate_series(1, 2) p`)
	f := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      product: text
      qty: integer
    query: |
      SELECT s.d, p.name AS product, s.qty
      FROM sales s JOIN products p ON s.product_id = p.product_id
`}, "t")
	e.fillFromDay3(f)
	e.exec(`UPDATE products SET name = 'green apple' WHERE product_id = 1`)
	refresh(t, e.runner(now0), reqWindow(f))

	pgtest.SameRows(t, "apple rows by name", e.rows(`SELECT product, min(d), max(d), count(*) FROM t WHERE product <> 'pear' GROUP BY product`),
		[]string{"(\"green apple\",2026-03-08,2026-03-10,3)", "(apple,2026-03-03,2026-03-07,5)"})
	if n := e.count(`SELECT count(*) FROM t WHERE product = 'pear'`); n != 8 {
		t.Errorf("%d pear rows, want 8", n)
	}
}

// A target keeps history its source has dropped: the source's retention
// deletes old rows, refreshes never touch them in the target.
func TestRetentionTargetKeepsHistory(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	e.fillFromDay3(f)
	before := e.rows(`SELECT * FROM t`)

	e.exec(`DELETE FROM ev WHERE d < '2026-03-08'`)
	refresh(t, e.runner(now0), reqWindow(f))
	pgtest.SameRows(t, "target after the source dropped days outside the window", e.rows(`SELECT * FROM t`), before)

	// Two days later the window is d >= 03-10; the source keeps only that.
	e.exec(`DELETE FROM ev WHERE d < '2026-03-10'`)
	refresh(t, e.runner(at(2)), reqWindow(f))
	pgtest.SameRows(t, "target after the window moved and the source dropped more", e.rows(`SELECT * FROM t`), before)
}

// Rows written into the target by DML survive refreshes outside the window;
// inside the window they are replaced by what the query yields.
func TestDMLRowsOutsideWindowSurvive(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`INSERT INTO t VALUES ('2025-12-31', 'legacy', 1), ('2026-03-07', 'legacy', 2), (NULL, 'legacy', 3),
		('2026-03-09', 'dml', 4), ('2026-03-12', 'dml', 5);
		UPDATE t SET v = -1 WHERE d = '2026-03-10'`)

	refresh(t, e.runner(now0), reqWindow(f))
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`
		SELECT * FROM ev WHERE d >= '2026-03-08'
		UNION ALL VALUES ('2025-12-31'::date, 'legacy', 1), ('2026-03-07', 'legacy', 2), (NULL, 'legacy', 3)`))

	// And again a day later: the legacy rows are still there.
	refresh(t, e.runner(at(1)), reqWindow(f))
	if n := e.count(`SELECT count(*) FROM t WHERE k = 'legacy'`); n != 3 {
		t.Errorf("%d legacy rows after the next refresh, want 3", n)
	}
}

// An override recomputes exactly its own range, across the window's edge,
// and leaves the flow as it was: the next refresh uses the flow's window.
func TestOverrideRecomputesExactlyItsRange(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	e.fillFromDay3(f)
	e.exec(`INSERT INTO t VALUES ('2026-03-05', 'dml', 1), ('2026-03-01', 'dml', 2)`)
	e.exec(`CREATE TABLE before AS SELECT * FROM t`)
	// The flow's definition and window state; dead_rows and vacuums are
	// the target's upkeep, which any write changes.
	flowState := `SELECT flow, pipeline, target_schema, target_table, target_oid, columns, query_fingerprint, predicate_cel,
		predicate_sql, env_version, determinism, last_refresh_at, created_at FROM rwc.flows`
	flowsBefore := e.rows(flowState)
	windowSQL := e.value(`SELECT predicate_sql FROM rwc.flows WHERE flow = 't'`)
	windowCEL := e.value(`SELECT predicate_cel FROM rwc.flows WHERE flow = 't'`)

	e.exec(`UPDATE ev SET v = v + 1000`)
	res := refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override,
		Where: where(t, f, `d >= date('2026-03-04') && d <= date('2026-03-08')`)})
	checkOutcome(t, res, compile.ActionBackfill, compile.ReasonBackfill)
	if res.RowsDeleted != 11 || res.RowsInserted != 10 {
		t.Errorf("deleted %d, inserted %d; want 11 (10 + one DML row) and 10", res.RowsDeleted, res.RowsInserted)
	}
	pgtest.SameRows(t, "target after the override", e.rows(`SELECT * FROM t`), e.rows(`
		SELECT * FROM before WHERE d < '2026-03-04' OR d > '2026-03-08'
		UNION ALL SELECT * FROM ev WHERE d BETWEEN '2026-03-04' AND '2026-03-08'`))
	if !strings.Contains(res.PredicateSQL, "2026-03-04") || strings.Contains(res.PredicateSQL, "2026-03-10") {
		t.Errorf("override ran with predicate %s", res.PredicateSQL)
	}
	pgtest.SameRows(t, "rwc.flows after the override", e.rows(flowState), flowsBefore)

	// The source changed on every day before the override; the override
	// recomputed 03-04..03-08 but the next refresh still owes the window's
	// days their new rows: incremental, all three days (03-08 again, at no
	// harm), and the override's own writes are not taken for external DML.
	next := refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, next, compile.ActionIncremental)
	pgtest.SameRows(t, "partitions after the override", next.Partitions, []string{"2026-03-08", "2026-03-09", "2026-03-10"})
	if next.PredicateSQL != windowSQL || next.PredicateCEL != windowCEL {
		t.Errorf("the refresh after the override used %s (%s), want the flow's window %s (%s)",
			next.PredicateSQL, next.PredicateCEL, windowSQL, windowCEL)
	}
	pgtest.SameRows(t, "target after the next window refresh", e.rows(`SELECT * FROM t`), e.rows(`
		SELECT * FROM before WHERE d < '2026-03-04' UNION ALL SELECT * FROM ev WHERE d >= '2026-03-04'`))
	evs, err := run.Events(context.Background(), e.db, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	last2 := evs[len(evs)-2:]
	if last2[0].Action != compile.ActionBackfill || last2[0].PredicateSQL != res.PredicateSQL ||
		last2[1].Action != compile.ActionIncremental || last2[1].PredicateSQL != windowSQL {
		t.Errorf("events: %+v", last2)
	}
}

// A full refresh leaves only the window and says how many rows it lost.
func TestFullRefreshLeavesOnlyWindow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	e.fillFromDay3(f)
	// 10 rows on 03-03..07 have left the window, plus two DML rows outside
	// it (a NULL date is outside: the predicate is not TRUE there).
	e.exec(`INSERT INTO t VALUES ('2020-01-01', 'dml', 0), (NULL, 'dml', 0)`)
	e.exec(`UPDATE ev SET v = v + 1000`)

	res := refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Full})
	checkOutcome(t, res, compile.ActionFullRefresh, compile.ReasonFullRefreshRequested)
	if res.RowsOutside != 12 || res.RowsDeleted != 18 || res.RowsInserted != 6 {
		t.Errorf("outside %d, deleted %d, inserted %d; want 12, 18, 6", res.RowsOutside, res.RowsDeleted, res.RowsInserted)
	}
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM ev WHERE d >= '2026-03-08'`))
	if got := e.value(`SELECT details->>'rows_outside_window_lost' FROM rwc.events WHERE flow = 't' ORDER BY id DESC LIMIT 1`); got != "12" {
		t.Errorf("event details record %s rows lost, want 12", got)
	}
	// The full refresh stored fresh fingerprints: nothing changed since.
	next := refresh(t, e.runner(now0), reqWindow(f))
	checkOutcome(t, next, compile.ActionIncremental)
	if next.RowsDeleted != 0 || next.RowsInserted != 0 || len(next.Partitions) != 0 {
		t.Errorf("refresh after the full refresh: -%d +%d partitions %v, want nothing recomputed", next.RowsDeleted, next.RowsInserted, next.Partitions)
	}
}

// reset_allowed: false refuses a full refresh, whoever asks, and changes
// nothing: not the target, not the state, not the event log.
func TestResetNotAllowedRefusesFullRefresh(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": strings.Replace(dailySpec, "    columns:",
		"    properties:\n      reset_allowed: false\n    columns:", 1)}, "t")
	if f.Table.ResetAllowed {
		t.Fatal("setup: reset_allowed: false did not load")
	}
	e.fillFromDay3(f)
	e.exec(`INSERT INTO t VALUES ('2020-01-01', 'dml', 0)`)
	e.exec(`UPDATE ev SET v = v + 1000`)
	target, flows, events := e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM rwc.flows`), e.rows(`SELECT * FROM rwc.events`)

	res := e.runner(now0).Refresh(context.Background(), run.Request{Flow: f, Mode: run.Full})
	var refusal *run.Refusal
	if !errors.As(res.Err, &refusal) || !strings.Contains(res.Err.Error(), "reset_allowed: false") {
		t.Fatalf("full refresh of a reset_allowed: false table: err = %v, want a refusal naming reset_allowed", res.Err)
	}
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), target)
	pgtest.SameRows(t, "rwc.flows", e.rows(`SELECT * FROM rwc.flows`), flows)
	pgtest.SameRows(t, "rwc.events", e.rows(`SELECT * FROM rwc.events`), events)
}

// The target is matched BY NAME: the query lists the columns in another
// order than columns: does, with types a positional insert could not take
// (numeric into date) or would silently swap (two integers).
func TestInsertByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE src (d date, k text, a int, b int, amount numeric(10,2));
		INSERT INTO src VALUES ('2026-03-09', 'x', 1, 2, 3.5), ('2026-03-10', 'y', 10, 20, 30.25), ('2026-03-01', 'z', 0, 0, 0)`)
	f := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      a: integer
      b: integer
      amount: numeric(10,2)
    query: |
      SELECT amount, b, a, k, d FROM src
`}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	pgtest.SameRows(t, "target", e.rows(`SELECT d, k, a, b, amount FROM t`),
		[]string{"(2026-03-09,x,1,2,3.50)", "(2026-03-10,y,10,20,30.25)"})
	if got := e.value(`SELECT string_agg(attname, ' ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0`); got != "d k a b amount" {
		t.Errorf("target columns %s, want them in the order of columns:", got)
	}
}

// The action and reasons a refresh records: create/FIRST_REFRESH, then
// incremental; a changed query says QUERY_CHANGED once and recomputes the
// window, a reformatted one does not.
func TestActionsAndReasons(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	first := refresh(t, r, reqWindow(f))
	checkOutcome(t, first, compile.ActionCreate, compile.ReasonFirstRefresh)
	if first.RowsDeleted != 0 || first.RowsInserted != 6 {
		t.Errorf("first refresh deleted %d, inserted %d; want 0 and 6", first.RowsDeleted, first.RowsInserted)
	}
	second := refresh(t, r, reqWindow(f))
	checkOutcome(t, second, compile.ActionIncremental)
	if second.RowsDeleted != 0 || second.RowsInserted != 0 || len(second.Partitions) != 0 {
		t.Errorf("second refresh, nothing changed: -%d +%d partitions %v, want nothing recomputed", second.RowsDeleted, second.RowsInserted, second.Partitions)
	}

	reformatted := strings.Replace(dailySpec, "SELECT d, k, v FROM ev", "select d,  k, v  -- same query\n      from EV", 1)
	checkOutcome(t, refresh(t, r, reqWindow(flow(t, map[string]string{"p.yaml": reformatted}, "t"))), compile.ActionIncremental)

	changed := flow(t, map[string]string{"p.yaml": strings.Replace(dailySpec, "SELECT d, k, v FROM", "SELECT d, k, v * 2 AS v FROM", 1)}, "t")
	res := refresh(t, r, reqWindow(changed))
	checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonQueryChanged)
	if res.RowsDeleted != 6 || res.RowsInserted != 6 {
		t.Errorf("refresh after the query changed: -%d +%d, want the whole window (6 and 6)", res.RowsDeleted, res.RowsInserted)
	}
	pgtest.SameRows(t, "target after the query changed", e.rows(`SELECT * FROM t`), e.rows(`SELECT d, k, v * 2 FROM ev WHERE d >= '2026-03-08'`))
	checkOutcome(t, refresh(t, r, reqWindow(changed)), compile.ActionIncremental)
	// Going back to the old query is a change again.
	checkOutcome(t, refresh(t, r, reqWindow(f)), compile.ActionRecomputeWindow, compile.ReasonQueryChanged)

	evs, err := run.Events(context.Background(), e.db, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, string(ev.Action)+" "+strings.Join(compile.Words(ev.Reasons), ","))
	}
	pgtest.SameRows(t, "event log", got, []string{
		"create FIRST_REFRESH", "incremental ", "incremental ", "recompute_window QUERY_CHANGED",
		"incremental ", "recompute_window QUERY_CHANGED"})
}

// rwc never adopts a table it did not create: neither one that was there
// before, nor one dropped and created again behind its back.
func TestRefusesToAdoptForeignTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(e *env, f *flowT)
		want  string
	}{
		{"existing", func(e *env, f *flowT) {}, "not created by rwc"},
		{"recreated", func(e *env, f *flowT) {
			refresh(e.t, e.runner(now0), reqWindow(f))
			e.exec(`DROP TABLE t`)
		}, "dropped and created again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
			tc.setup(e, f)
			e.exec(`CREATE TABLE t (d date, k text, v integer); INSERT INTO t VALUES ('2026-03-09', 'mine', 1), ('2026-01-01', 'mine', 2)`)
			target, flows, events := e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM rwc.flows`), e.rows(`SELECT * FROM rwc.events`)

			res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) || !strings.Contains(res.Err.Error(), `"public"."t"`) {
				t.Fatalf("err = %v, want one naming the table and saying %q", res.Err, tc.want)
			}
			pgtest.SameRows(t, "table", e.rows(`SELECT * FROM t`), target)
			pgtest.SameRows(t, "rwc.flows", e.rows(`SELECT * FROM rwc.flows`), flows)
			pgtest.SameRows(t, "rwc.events", e.rows(`SELECT * FROM rwc.events`), events)
		})
	}
}

// current_date() is read in the runner's time zone: at 12:00 UTC on
// 2026-03-10 it is already 03-11 on Kiritimati (UTC+14), and at 05:00 UTC
// it is still 03-09 in Pago Pago (UTC-11).
func TestWindowUsesLocalDate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		zone string
		at   time.Time
		from string // the window's first day
	}{
		{"UTC", now0, "2026-03-08"},
		{"Pacific/Kiritimati", now0, "2026-03-09"},
		{"Pacific/Pago_Pago", now0.Add(-7 * time.Hour), "2026-03-07"},
	} {
		t.Run(tc.zone, func(t *testing.T) {
			t.Parallel()
			zone, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			e := newDailyEnv(t)
			f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
			r := run.New(e.db, run.Options{Now: func() time.Time { return tc.at }, Zone: zone})
			refresh(t, r, reqWindow(f))
			evs, err := run.Events(context.Background(), e.db, "t", 1)
			if err != nil || len(evs) != 1 {
				t.Fatalf("events: %v, %v", evs, err)
			}
			if want := `'` + tc.from + `'`; !strings.Contains(evs[0].PredicateSQL, want) {
				t.Errorf("event predicate_sql %s, want the window to start at %s", evs[0].PredicateSQL, want)
			}
			if got := e.value(`SELECT min(d)::text FROM t`); got != tc.from {
				t.Errorf("target starts at %s, want %s", got, tc.from)
			}
		})
	}
}

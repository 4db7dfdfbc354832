package run_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// withExpect adds an expect: block (YAML under the table, indented by
// four) to a spec.
func withExpect(spec, expect string) string {
	return strings.Replace(spec, "    query: |", "    expect:\n"+expect+"    query: |", 1)
}

// targetPrint is the target as bytes and as row versions: an error
// failure must leave both as they were.
func (e *env) targetPrint() string {
	e.t.Helper()
	return e.value(`SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) || ' ' ||
		md5(string_agg(ctid::text || xmin::text, ',' ORDER BY ctid)) FROM public.t`)
}

// expectCases are one passing and one failing expectation of every kind,
// over the daily flow's rows (d, k in a/b, v = day or 10 × day); setup runs
// before the checked refresh, a window refresh (checked: the window's rows).
var expectCases = []modeCase{
	{name: "check", passing: "v >= 0", failing: "v < 50", failingRows: 3, checked: 6},
	{name: "check_current_date", passing: "d <= current_date()", failing: "d < current_date()", failingRows: 2, checked: 6},
	{name: "check_null", passing: "v != null", failing: "k != null", setup: `INSERT INTO ev VALUES ('2026-03-09', NULL, 5)`, failingRows: 1, checked: 7},
	{name: "not_null", passing: "[d, v]", failing: "[k]", setup: `INSERT INTO ev VALUES ('2026-03-09', NULL, 5)`, failingRows: 1, checked: 7},
	{name: "unique", passing: "[d, k]", failing: "[d]", failingRows: 6, checked: 6},
	{name: "unique_across_table", passing: "[d, k]", failing: "[v]", setup: `INSERT INTO public.t VALUES ('2026-03-01', 'z', 10)`, failingRows: 1, checked: 6},
	// A key of the partition column and another repeats within a day only
	// (counted per day in the pass: see compile.Checks.DistinctFor).
	{name: "unique_per_day", passing: "[v, d]", failing: "[d, k]", setup: `INSERT INTO ev VALUES ('2026-03-09', 'a', 7)`, failingRows: 2, checked: 7},
	{name: "rows", passing: "{min: 6, max: 6}", failing: "{min: 7}", failingRows: 1, checked: 6},
	{name: "rows_max", passing: "{max: 100}", failing: "{max: 5}", failingRows: 1, checked: 6},
	{name: "rows_max_change", passing: "{max_change: 60%}", failing: "{max_change: 40%}", setup: `DELETE FROM ev WHERE d = '2026-03-09' AND k = 'a'`, failingRows: 1, checked: 5},
	{name: "relationships", passing: "{column: k, to: dim.k}", failing: "{column: k, to: dim_a.k}", failingRows: 3, checked: 6},
}

// expectYAML is the expect: entry of case c with the given value.
func expectYAML(kind, value, severity string) string {
	key := kind
	across := ""
	switch kind {
	case "check_current_date", "check_null":
		key = "check"
	case "unique_across_table":
		key, across = "unique", "        across_table: true\n"
	case "unique_per_day":
		key = "unique"
	case "rows_max", "rows_max_change":
		key = "rows"
	}
	if key == "check" {
		value = "'" + value + "'"
	}
	return "      x:\n        " + key + ": " + value + "\n" + across + "        severity: " + severity + "\n"
}

// A window refresh (the query changed) checks what it wrote: a passing
// expectation commits; a failing one of severity error rolls back, leaving
// the target byte for byte and row version for row version as it was; one
// of severity warn commits and says so.
func TestExpectationsWindowRefresh(t *testing.T) {
	t.Parallel()
	changed := strings.Replace(dailySpec, "SELECT d, k, v FROM ev", "SELECT d, k, v + 0 AS v FROM ev", 1)
	expectInMode(t, changed, expectCases, compile.ActionRecomputeWindow, func(e *env) {
		refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	}, func(_ *testing.T, f *compile.Flow) run.Request { return reqWindow(f) })
}

// checkExpectResult checks one refresh's expectation result x: whether the
// refresh failed, whether x failed and on how many rows, and that the last
// result is recorded for rwc status.
func checkExpectResult(t *testing.T, e *env, res run.Result, fails, failing bool, rows int64) {
	t.Helper()
	var ef *run.ExpectationsFailed
	if fails != errors.As(res.Err, &ef) || (!fails && res.Err != nil) {
		t.Fatalf("refresh error %v, want an expectation failure: %v", res.Err, fails)
	}
	if len(res.Expectations) != 1 {
		t.Fatalf("results %+v, want one", res.Expectations)
	}
	x := res.Expectations[0]
	if x.Passed == failing || (failing && x.Failing != rows) {
		t.Errorf("result %+v, want failing %v on %d", x, failing, rows)
	}
	if failing && x.Kind != "rows" && len(x.Samples) == 0 {
		t.Errorf("a failure without samples: %+v", x)
	}
	if x.Line == 0 || !strings.HasSuffix(x.File, "p.yaml") {
		t.Errorf("result at %s, want the expectation's position", x.Pos)
	}
	outcome := "committed"
	if fails {
		outcome = "rolled_back"
	}
	if got := e.value(`SELECT passed || ' ' || outcome FROM rwc.expectation_results WHERE flow = 't' AND name = 'x'`); got != map[bool]string{true: "false", false: "true"}[failing]+" "+outcome {
		t.Errorf("recorded %q", got)
	}
	kept := e.value(`SELECT concat_ws('|', failing, checked_rows, at, message, array_to_string(samples, '|')) FROM rwc.expectation_results WHERE flow = 't' AND name = 'x'`)
	if want := strings.Join([]string{strconv.FormatInt(x.Failing, 10), strconv.FormatInt(x.Checked, 10), x.Pos.String(), x.Message, strings.Join(x.Samples, "|")}, "|"); kept != want {
		t.Errorf("recorded %q, want %q", kept, want)
	}
}

// modeCase is an expectation case in one kind of refresh: the failing
// rows it finds and the rows it checks (what that refresh wrote).
type modeCase struct {
	name, passing, failing, setup string
	failingRows, checked          int64
}

// expectInMode runs each case passing, failing with severity error (the
// target stays as it was) and failing with severity warn (it commits),
// refreshing with refresh after first (a first refresh without
// expectations) and setup.
func expectInMode(t *testing.T, spec string, cases []modeCase, action compile.Action, first func(*env), req func(*testing.T, *compile.Flow) run.Request) {
	for _, c := range cases {
		for _, tc := range []struct {
			variant, value, severity string
			fails                    bool
		}{
			{"pass", c.passing, "error", false},
			{"error", c.failing, "error", true},
			{"warn", c.failing, "warn", false},
		} {
			t.Run(c.name+"/"+tc.variant, func(t *testing.T) {
				t.Parallel()
				e := newDailyEnv(t)
				e.exec(`CREATE TABLE dim (k text); INSERT INTO dim VALUES ('a'), ('b'); CREATE TABLE dim_a (k text); INSERT INTO dim_a VALUES ('a')`)
				first(e)
				if c.setup != "" {
					e.exec(c.setup)
				}
				before := e.targetPrint()
				f := flow(t, map[string]string{"p.yaml": withExpect(spec, expectYAML(c.name, tc.value, tc.severity))}, "t")
				res := e.runner(now0).Refresh(context.Background(), req(t, f))
				checkExpectResult(t, e, res, tc.fails, tc.variant != "pass", c.failingRows)
				if res.Action != action {
					t.Errorf("action %s (%v), want %s", res.Action, res.Reasons, action)
				}
				if x := res.Expectations[0]; x.Checked != c.checked {
					t.Errorf("checked %d rows, want %d (what the refresh wrote)", x.Checked, c.checked)
				}
				if after := e.targetPrint(); (after == before) != tc.fails {
					t.Errorf("target unchanged: %v, want %v", after == before, tc.fails)
				}
			})
		}
	}
}

// An incremental refresh checks the partitions it recomputed, and no
// others: rows.max_change compares each with what it held before.
func TestExpectationsIncremental(t *testing.T) {
	t.Parallel()
	changed := `UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`
	expectInMode(t, dailySpec, []modeCase{
		{name: "check", passing: "v >= 0", failing: "v < 50", setup: changed, failingRows: 1, checked: 2},
		{name: "not_null", passing: "[d, v]", failing: "[k]", setup: `INSERT INTO ev VALUES ('2026-03-09', NULL, 5)`, failingRows: 1, checked: 3},
		{name: "unique", passing: "[d, k]", failing: "[d]", setup: changed, failingRows: 2, checked: 2},
		{name: "rows_max_change", passing: "{max_change: 60%}", failing: "{max_change: 40%}", setup: `DELETE FROM ev WHERE d = '2026-03-09' AND k = 'a'`, failingRows: 1, checked: 1},
		{name: "relationships", passing: "{column: k, to: dim.k}", failing: "{column: k, to: dim_a.k}", setup: changed, failingRows: 1, checked: 2},
	}, compile.ActionIncremental, func(e *env) {
		refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	}, func(_ *testing.T, f *compile.Flow) run.Request { return reqWindow(f) })
}

// An override (rwc refresh --where) checks its range.
func TestExpectationsOverride(t *testing.T) {
	t.Parallel()
	expectInMode(t, dailySpec, []modeCase{
		{name: "check", passing: "v >= 0", failing: "v < 85", failingRows: 1, checked: 4},
		{name: "unique", passing: "[d, k]", failing: "[d]", failingRows: 4, checked: 4},
		{name: "rows", passing: "{min: 4}", failing: "{min: 5}", failingRows: 1, checked: 4},
		{name: "rows_max_change", passing: "{max_change: 60%}", failing: "{max_change: 40%}", setup: `DELETE FROM ev WHERE d = '2026-03-09' AND k = 'a'`, failingRows: 1, checked: 3},
	}, compile.ActionBackfill, func(e *env) {
		refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	}, func(t *testing.T, f *compile.Flow) run.Request {
		return run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-08') && d <= date('2026-03-09')")}
	})
}

// A partitioned target's refresh checks the staged partitions before it
// swaps them in: a failure leaves the old partitions attached.
func TestExpectationsPartitionSwap(t *testing.T) {
	t.Parallel()
	// v + 1: the old rows would fail v < 11 three times, the new ones fail
	// it four times.
	changed := strings.Replace(partSpec, "SELECT d, k, v FROM ev", "SELECT d, k, v + 1 AS v FROM ev", 1)
	expectInMode(t, changed, []modeCase{
		{name: "check", passing: "v >= 0", failing: "v < 11", failingRows: 4, checked: 6},
		{name: "unique_across_table", passing: "[d, k]", failing: "[v]", setup: `CREATE TABLE public.t_old PARTITION OF public.t FOR VALUES FROM ('2026-03-01') TO ('2026-03-08');
			INSERT INTO public.t VALUES ('2026-03-07', 'z', 10)`, failingRows: 1, checked: 6},
		{name: "rows_max_change", passing: "{max_change: 60%}", failing: "{max_change: 40%}", setup: `DELETE FROM ev WHERE d = '2026-03-09' AND k = 'a'`, failingRows: 1, checked: 5},
	}, compile.ActionRecomputeWindow, func(e *env) {
		refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": partSpec}, "t")))
	}, func(_ *testing.T, f *compile.Flow) run.Request { return reqWindow(f) })
}

// A batched backfill whose second batch fails an expectation stops there:
// the first batch stays committed, the second and third are not run, and
// after the fix (here: the upstream row corrected) it resumes at the
// second batch.
func TestExpectationsBackfillStopsAtBatch(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := withExpect(dailySpec, "      no_negative:\n        check: v >= 0\n")
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	r := e.runner(now0)
	refresh(t, r, reqWindow(f))
	e.exec(`UPDATE ev SET v = -1 WHERE d = '2026-03-04' AND k = 'a'`)
	job := &run.BackfillJob{Path: "backfills/b.yaml", Content: "backfill: t", Flow: f, Reason: "history", BatchDays: 2,
		Where: where(t, f, "d >= date('2026-03-01') && d <= date('2026-03-06')")}
	var committed []int
	progress := func(p run.BatchProgress) { committed = append(committed, p.Batch) }
	_, err := r.Backfill(context.Background(), job, progress)
	var ef *run.ExpectationsFailed
	if !errors.As(err, &ef) || !strings.Contains(err.Error(), "batch 2 of 3") {
		t.Fatalf("backfill: %v, want an expectation failure in batch 2", err)
	}
	if !strings.Contains(err.Error(), "d=2026-03-04, k=a, v=-1") {
		t.Errorf("the failure does not show the failing row:\n%v", err)
	}
	if got := e.value(`SELECT string_agg(DISTINCT d::text, ',') FROM t WHERE d < '2026-03-08'`); got != "2026-03-01,2026-03-02" || len(committed) != 1 {
		t.Fatalf("after the failure the target holds days %v (batches %v), want batch 1's only", got, committed)
	}
	e.exec(`UPDATE ev SET v = 4 WHERE d = '2026-03-04' AND k = 'a'`)
	if done, err := r.Backfill(context.Background(), job, progress); err != nil || !done {
		t.Fatalf("resumed backfill: done %v, %v", done, err)
	}
	if fmtInts(committed) != "1,2,3" {
		t.Errorf("batches run %v, want 1 then 2 and 3 on resuming", committed)
	}
	if n := e.count(`SELECT count(*) FROM t WHERE d < '2026-03-08'`); n != 12 {
		t.Errorf("%d rows of history, want 12", n)
	}
}

func fmtInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// relations lists the tables of schema public with their oids: a rolled
// back partition swap leaves no staging table behind and every partition
// where it was.
func (e *env) relations() string {
	return strings.Join(e.rows(`SELECT relname || ':' || oid FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY 1`), ",")
}

// A partitioned target whose staged partitions fail an expectation of
// severity error keeps its partitions and gets no staging table; one of
// severity warn swaps the staged ones in.
func TestExpectationsPartitionSwapStages(t *testing.T) {
	t.Parallel()
	changed := strings.Replace(partSpec, "SELECT d, k, v FROM ev", "SELECT d, k, v + 1 AS v FROM ev", 1)
	for _, severity := range []string{"error", "warn"} {
		t.Run(severity, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			r := e.runner(now0)
			refresh(t, r, reqWindow(flow(t, map[string]string{"p.yaml": partSpec}, "t")))
			before, print := e.relations(), e.targetPrint()
			f := flow(t, map[string]string{"p.yaml": withExpect(changed, expectYAML("check", "v < 11", severity))}, "t")
			res := r.Refresh(context.Background(), reqWindow(f))
			after := e.relations()
			if severity == "error" {
				var ef *run.ExpectationsFailed
				if !errors.As(res.Err, &ef) || after != before || e.targetPrint() != print {
					t.Fatalf("error %v; tables before %s, after %s; want the failure and nothing changed", res.Err, before, after)
				}
				return
			}
			if res.Err != nil || after == before || len(res.Expectations) != 1 || res.Expectations[0].Passed {
				t.Fatalf("warn: error %v, results %+v; tables before %s, after %s: want the staged partitions swapped in", res.Err, res.Expectations, before, after)
			}
			if n := e.count(`SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND NOT relispartition AND relname <> 'ev'`); n != 0 {
				t.Errorf("%d staging tables left after the swap: %s", n, after)
			}
		})
	}
}

// A failing row's huge value is cut by the server: a sample query sends
// at most a few hundred bytes a value, however large the target's values.
func TestExpectationsSampleValuesBounded(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := withExpect(dailySpec, "      short_k:\n        check: v >= 0\n")
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	e.exec(`INSERT INTO public.t VALUES ('2026-03-09', repeat(E'x\x01', 500000), -1)`)
	checks, err := f.TestChecks(nil, predicate.Resolution{Now: now0})
	if err != nil {
		t.Fatal(err)
	}
	longest := e.value(`SELECT max(octet_length(x)) FROM (` + checks.Samples[0] + `) AS s(a, b, c), LATERAL (VALUES (a), (b), (c)) AS l(x)`)
	if n, _ := strconv.Atoi(longest); n > 4*(120+1) {
		t.Errorf("the sample query returns values of %s bytes, want them cut to about 120 characters", longest)
	}
	tested, err := run.TestExpectations(context.Background(), e.db, f, nil, run.Options{Now: func() time.Time { return now0 }})
	if err != nil || len(tested.Results) != 1 || len(tested.Results[0].Samples) != 1 {
		t.Fatalf("rwc test: %v, %+v", err, tested.Results)
	}
	if s := tested.Results[0].Samples[0]; !strings.HasSuffix(s, "…, v=-1") || len(s) > 400 {
		t.Errorf("sample %.200q…, want the long value cut", s)
	}
}

// An expectation on a column added by the same change fails after the
// change committed on its own: the error, and the event's, say the column
// change stays rather than that the target is unchanged.
func TestExpectationsAfterColumnChange(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
	files := gatedSpec(dailyColumns+"      w: integer\n", "SELECT d, k, v, CASE WHEN v = 9 THEN NULL ELSE v END AS w FROM ev")
	files["p.yaml"] = withExpect(files["p.yaml"], "      has_w:\n        not_null: [w]\n")
	res := r.Refresh(context.Background(), reqWindow(flow(t, files, "t")))
	var ef *run.ExpectationsFailed
	if !errors.As(res.Err, &ef) {
		t.Fatalf("refresh: %v, want an expectation failure", res.Err)
	}
	event := e.value(`SELECT error FROM rwc.events WHERE flow = 't' ORDER BY id DESC LIMIT 1`)
	for what, text := range map[string]string{"error": res.Err.Error(), "event": event} {
		if strings.Contains(text, "target is unchanged") || !strings.Contains(text, "column changes (column_added:w), committed before it, stay") {
			t.Errorf("the %s says:\n%s\nwant that the column change stays", what, text)
		}
	}
	if !strings.Contains(res.Err.Error(), "has_w (not_null): 1 of 6 rows have a NULL in w") {
		t.Errorf("the error does not show the failure:\n%v", res.Err)
	}
}

// A relationship the server cannot check (its table is missing, or a view
// whose function writes) fails the refresh at the expectation's position,
// in the server's words, with the target unchanged; rwc test runs it
// read-only, so the function cannot write.
func TestExpectationsUncheckableRelationship(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE written (n int);
		CREATE FUNCTION keys() RETURNS SETOF text LANGUAGE sql VOLATILE AS $$ INSERT INTO written VALUES (1); SELECT 'a' $$;
		CREATE VIEW dim_view AS SELECT k FROM keys() AS k`)
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	changed := strings.Replace(dailySpec, "SELECT d, k, v FROM ev", "SELECT d, k, v + 0 AS v FROM ev", 1)
	missing := flow(t, map[string]string{"p.yaml": withExpect(changed, expectYAML("relationships", "{column: k, to: nowhere.k}", "error"))}, "t")
	before := e.targetPrint()
	res := r.Refresh(context.Background(), reqWindow(missing))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "p.yaml:10:7: flow t: expectation x cannot be checked: ") ||
		!strings.Contains(res.Err.Error(), `relation "public.nowhere" does not exist`) || strings.Contains(res.Err.Error(), "pq:") {
		t.Errorf("refresh: %v; want the expectation's position and the server's words", res.Err)
	}
	if e.targetPrint() != before {
		t.Errorf("the target changed")
	}
	view := flow(t, map[string]string{"p.yaml": withExpect(changed, expectYAML("relationships", "{column: k, to: dim_view.k}", "warn"))}, "t")
	_, err := run.TestExpectations(context.Background(), e.db, view, where(t, view, "d >= date('2026-03-09')"), run.Options{Now: func() time.Time { return now0 }})
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("rwc test through a view whose function writes: %v, want the read-only transaction's refusal", err)
	}
	if n := e.count(`SELECT count(*) FROM written`); n != 0 {
		t.Errorf("rwc test let a function write %d rows", n)
	}
}

// A column may be named like the checks' own aliases (n, the count of a
// duplicated key): unique still counts, within and across the table.
func TestExpectationsColumnNamedLikeAlias(t *testing.T) {
	t.Parallel()
	spec := strings.NewReplacer("      k: text\n      v: integer\n", "      w: text\n      n: integer\n", "SELECT d, k, v FROM ev", "SELECT d, k AS w, v AS n FROM ev").Replace(dailySpec)
	for _, across := range []string{"", "        across_table: true\n"} {
		e := newDailyEnv(t)
		e.exec(`CREATE TABLE dim (w text); INSERT INTO dim VALUES ('a'), ('b')`)
		f := flow(t, map[string]string{"p.yaml": withExpect(spec, "      u:\n        unique: [n]\n"+across+"      dup:\n        unique: [d]\n"+across+"        severity: warn\n"+
			"      known:\n        relationships: {column: w, to: dim.w}\n      has_w:\n        not_null: [w]\n")}, "t")
		res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
		if res.Err != nil || len(res.Expectations) != 4 || !res.Expectations[0].Passed || res.Expectations[1].Failing != 6 || !res.Expectations[2].Passed {
			t.Fatalf("refresh (across %q): %v, results %+v", across, res.Err, res.Expectations)
		}
	}
}

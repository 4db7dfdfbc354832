package run_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// A source whose triggers log the partition values its writes touched has
// those partitions recomputed without waiting for a probe, which runs
// beside the write and only there; a table whose trigger vouches that it
// did not change is not probed at all. What the refresh stores is what
// probes of everything would have found: with the triggers taken out of
// the way, probes of the whole window find nothing changed.
func TestCaptureValuesProbeOnlyLogged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, dml string
		logged    string   // the values logged, as the capture counts them
		want      []string // the partitions recomputed
	}{
		{"insert", `INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, "1", []string{"2026-03-09"}},
		{"update across days", `UPDATE ev SET d = '2026-03-10' WHERE d = '2026-03-09' AND k = 'a'`, "2", []string{"2026-03-09", "2026-03-10"}},
		{"delete", `DELETE FROM ev WHERE d = '2026-03-08' AND k = 'b'`, "1", []string{"2026-03-08"}},
		{"copy", `COPY ev FROM PROGRAM 'echo 2026-03-10,z,3' WITH (FORMAT csv)`, "1", []string{"2026-03-10"}},
		{"merge", `MERGE INTO ev USING (VALUES (DATE '2026-03-09', 'a')) s(d, k) ON ev.d = s.d AND ev.k = s.k WHEN MATCHED THEN UPDATE SET v = 0`, "1", []string{"2026-03-09"}},
		// The value is logged as rwc reads it, whatever the writer's DateStyle.
		{"writer's DateStyle", `SET DateStyle = 'SQL, DMY'; INSERT INTO ev VALUES ('09/03/2026', 'c', 1); RESET DateStyle`, "1", []string{"2026-03-09"}},
		{"outside the window", `UPDATE ev SET v = 0 WHERE d = '2026-03-02'`, "1", nil},
		{"two transactions", `INSERT INTO ev VALUES ('2026-03-08', 'c', 1); INSERT INTO ev VALUES ('2026-03-10', 'c', 1)`, "2", []string{"2026-03-08", "2026-03-10"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, f, res := refreshAfter(t, c.dml)
			if res.Action != compile.ActionIncremental || !slices.Equal(res.Partitions, c.want) {
				t.Fatalf("%s %v %v, want incremental %v", res.Action, res.Reasons, res.Partitions, c.want)
			}
			for _, want := range []string{`"ev" changed: ` + c.logged + " partition(s) logged, recomputed, probed beside the write", `"public"."t" unchanged, not probed`} {
				if !strings.Contains(res.Capture, want) {
					t.Errorf("capture %q, want it to say %q", res.Capture, want)
				}
			}
			sameAsQuery(t, e, res)
			// Probed whole now (the triggers' catalog rows change): nothing
			// differs from what the refresh stored.
			e.exec(`ALTER TABLE ev DISABLE TRIGGER rwc_capture_insert; ALTER TABLE t DISABLE TRIGGER rwc_capture`)
			again := refresh(t, e.runner(now0), reqWindow(f))
			if again.Action != compile.ActionIncremental || len(again.Partitions) != 0 || !strings.Contains(again.Capture, "disabled") {
				t.Errorf("probed whole: %s %v %v, capture %q; want nothing changed", again.Action, again.Reasons, again.Partitions, again.Capture)
			}
		})
	}
}

// A target whose trigger vouches that only rwc wrote it is not probed,
// but for the partitions the last refresh rewrote (stored as counts of its
// rows), and not those either when this refresh rewrites them again: what
// they hold then matters to nothing it stores. Either way, what it stores
// is what probes of everything find.
func TestCaptureValuesRewrittenAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, second string
		target       string // what the capture says of the target
	}{
		{"the same day", `INSERT INTO ev VALUES ('2026-03-09', 'd', 2)`, `"public"."t" unchanged, not probed`},
		{"another day", `INSERT INTO ev VALUES ('2026-03-10', 'd', 2)`,
			`"public"."t" unchanged but for the 1 partition(s) the last refresh rewrote, probed beside the write`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, f, first := refreshAfter(t, `INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
			if !slices.Equal(first.Partitions, []string{"2026-03-09"}) {
				t.Fatalf("first refresh: %s %v", first.Action, first.Partitions)
			}
			e.exec(c.second)
			res := refresh(t, e.runner(now0), reqWindow(f))
			if res.Action != compile.ActionIncremental || !strings.Contains(res.Capture, c.target) {
				t.Fatalf("%s %v %v, capture %q; want incremental, saying %q", res.Action, res.Reasons, res.Partitions, res.Capture, c.target)
			}
			sameAsQuery(t, e, res)
			e.exec(`ALTER TABLE ev DISABLE TRIGGER rwc_capture_insert; ALTER TABLE t DISABLE TRIGGER rwc_capture`)
			again := refresh(t, e.runner(now0), reqWindow(f))
			if again.Action != compile.ActionIncremental || len(again.Partitions) != 0 {
				t.Errorf("probed whole: %s %v %v, capture %q; want nothing changed", again.Action, again.Reasons, again.Partitions, again.Capture)
			}
		})
	}
}

// refreshAfter refreshes the daily flow capturing by triggers once its
// triggers vouch for every table (vouched), then after dml.
func refreshAfter(t *testing.T, dml string) (*env, *flowT, run.Result) {
	t.Helper()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(dml)
	return e, f, refresh(t, e.runner(now0), reqWindow(f))
}

// sameAsQuery checks that the target's window equals the query's rows.
func sameAsQuery(t *testing.T, e *env, res any) {
	t.Helper()
	if diff := e.rows(`(SELECT d, k, v FROM public.t WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= '2026-03-08')
		UNION ALL (SELECT d, k, v FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t WHERE d >= '2026-03-08')`); len(diff) > 0 {
		t.Errorf("the target's window differs from the query's rows (%v): %v", res, diff)
	}
}

// What the triggers cannot log as a value says "anything may have
// changed": a NULL partition value, a replica's write. The source is
// probed whole. (A TRUNCATE changes the table's catalog row: see
// TestCaptureTriggersLogged.)
func TestCaptureValuesNotLoggable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, dml string }{
		{"null", `INSERT INTO ev VALUES (NULL, 'c', 1); UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`},
		{"replica", `BEGIN; SET LOCAL session_replication_role = replica; UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'; COMMIT`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, _, res := refreshAfter(t, c.dml)
			if !strings.Contains(res.Capture, `"ev" changed;`) || strings.Contains(res.Capture, "logged") {
				t.Errorf("capture %q, want ev probed whole", res.Capture)
			}
			if !slices.Equal(res.Partitions, []string{"2026-03-09"}) {
				t.Errorf("%s %v, want 2026-03-09 recomputed", res.Action, res.Partitions)
			}
			sameAsQuery(t, e, res)
		})
	}
}

// Two flows that read the same table through different columns: its
// triggers log both, and neither flow's refresh takes the other's column
// away (which would have each reinstall the triggers, and probe, in turn).
func TestCaptureValuesTwoColumns(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": triggerSpec}, "t")
	byV := strings.NewReplacer("  t:\n", "  u:\n", "replace_where: d >= date_add(current_date(), -2)", "replace_where: v >= 50").Replace(triggerSpec)
	u := flow(t, map[string]string{"p.yaml": byV}, "u")
	for range 3 {
		refresh(t, e.runner(now0), reqWindow(f))
		refresh(t, e.runner(now0), reqWindow(u))
	}
	for _, fl := range []*flowT{f, u} {
		if res := refresh(t, e.runner(now0), reqWindow(fl)); !strings.Contains(res.Capture, "no probe") {
			t.Errorf("%s: capture %q, want nothing changed, unprobed", fl.Name(), res.Capture)
		}
	}
	if args := e.rows(`SELECT string_agg(a, '+') FROM pg_trigger, unnest(string_to_array(encode(tgargs, 'escape'), '\000')) a
		WHERE tgname = 'rwc_capture_insert' AND tgrelid = 'ev'::regclass AND a <> ''`); len(args) != 1 || args[0] != "(1+3)" {
		t.Errorf("rwc_capture_insert's arguments %v, want ev's columns 1 and 3", args)
	}
	e.exec(`UPDATE ev SET v = 60 WHERE d = '2026-03-09' AND k = 'a'`)
	res := refresh(t, e.runner(now0), reqWindow(u))
	if !slices.Equal(res.Partitions, []string{"60"}) || !strings.Contains(res.Capture, "2 partition(s) logged") {
		t.Errorf("u: %s %v, capture %q; want v 60 recomputed from the log (9, logged too, lies outside the window)", res.Action, res.Partitions, res.Capture)
	}
	res = refresh(t, e.runner(now0), reqWindow(f))
	if !slices.Equal(res.Partitions, []string{"2026-03-09"}) || !strings.Contains(res.Capture, "1 partition(s) logged") {
		t.Errorf("t: %s %v, capture %q; want 2026-03-09 recomputed from the log", res.Action, res.Partitions, res.Capture)
	}
}

// A dimension that changed forces the whole window; the fact, whose
// triggers vouch that it did not, is not probed for the fingerprints the
// refresh stores (nor is a second connection opened for it), and those it
// stores are exact: the next late row is found from the log alone.
func TestCaptureValuesDimensionChanged(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE kd (k text PRIMARY KEY, w integer); INSERT INTO kd VALUES ('a', 1), ('b', 2), ('c', 3)`)
	spec := strings.Replace(triggerSpec, "SELECT d, k, v FROM ev", "SELECT e.d, e.k, e.v + kd.w AS v FROM ev e JOIN kd ON kd.k = e.k  -- rwc:nolint RW403", 1)
	f := vouched(t, e, spec)
	e.exec(`UPDATE kd SET w = 10 WHERE k = 'a'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if res.Action != compile.ActionRecomputeWindow || !strings.Contains(res.Capture, `"ev" unchanged, not probed`) || !strings.Contains(res.Capture, `"kd" changed`) {
		t.Errorf("after the dimension changed: %s %v, capture %q; want the window recomputed, ev not probed", res.Action, res.Reasons, res.Capture)
	}
	// Again, now that the refresh before rewrote the whole window: the
	// target, whose trigger vouches for it, is not probed either (a probe
	// would only have named the reason).
	e.exec(`UPDATE kd SET w = 11 WHERE k = 'a'`)
	res = refresh(t, e.runner(now0), reqWindow(f))
	if res.Action != compile.ActionRecomputeWindow || !slices.Equal(res.Reasons, []compile.Reason{compile.ReasonCannotPushPredicate}) || !strings.Contains(res.Capture, `"public"."t" unchanged, not probed`) {
		t.Errorf("after the dimension changed again: %s %v, capture %q; want the window recomputed, the target not probed", res.Action, res.Reasons, res.Capture)
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	res = refresh(t, e.runner(now0), reqWindow(f))
	if !slices.Equal(res.Partitions, []string{"2026-03-09"}) || !strings.Contains(res.Capture, "1 partition(s) logged") {
		t.Errorf("after a late row: %s %v %v, capture %q; want 2026-03-09 recomputed from the log", res.Action, res.Reasons, res.Partitions, res.Capture)
	}
	if diff := e.rows(`(SELECT d, k, v FROM public.t EXCEPT ALL SELECT e.d, e.k, e.v + kd.w FROM ev e JOIN kd ON kd.k = e.k WHERE e.d >= '2026-03-08')
		UNION ALL (SELECT e.d, e.k, e.v + kd.w FROM ev e JOIN kd ON kd.k = e.k WHERE e.d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t)`); len(diff) > 0 {
		t.Errorf("the target differs from the query's rows: %v", diff)
	}
}

// The log of a table no flow keeps a snapshot of (its flow removed, or
// switched to fingerprints, the table keeping rwc's triggers) is cleared by
// any flow's refresh: it would otherwise grow with every write.
func TestCaptureValuesLogOfUntrackedTable(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(`CREATE TABLE gone (d date); INSERT INTO rwc.change_values VALUES ('gone'::regclass, pg_current_xact_id(), 1, '2026-03-09');
		INSERT INTO rwc.change_log VALUES ('gone'::regclass, pg_current_xact_id())`)
	refresh(t, e.runner(now0), reqWindow(f))
	if n := e.count(`SELECT (SELECT count(*) FROM rwc.change_log) + (SELECT count(*) FROM rwc.change_values)`); n != 0 {
		t.Errorf("%d log rows of a table no flow reads left after a refresh, want none", n)
	}
}

// After an upgrade of rwc, the value triggers run the earlier version's
// function: the refresh says so (not that a trigger was tampered with),
// probes the table, and rwc puts this version's function in; the next
// refreshes vouch again.
func TestCaptureValuesEarlierFunction(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(`DO $$ DECLARE def text; BEGIN
		SELECT pg_get_functiondef('rwc.capture_values()'::regprocedure) INTO def;
		EXECUTE replace(def, 'RETURN NULL;', 'RETURN NULL; -- an earlier rwc''s');
	END $$`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if want := `"ev" runs rwc.capture_values() not as this version of rwc makes it (an earlier version's, or changed since)`; !strings.Contains(res.Capture, want) {
		t.Errorf("capture %q, want it to say %q", res.Capture, want)
	}
	sameAsQuery(t, e, res)
	if got := e.value(`SELECT prosrc = $1 FROM pg_proc WHERE oid = 'rwc.capture_values()'::regprocedure`, compile.CaptureValuesFunctionBody); got != "true" {
		t.Errorf("after the refresh, rwc.capture_values() is not this rwc's")
	}
	refresh(t, e.runner(now0), reqWindow(f))
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") {
		t.Errorf("two refreshes later: capture %q, want the triggers to vouch again", res.Capture)
	}
}

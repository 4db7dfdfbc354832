package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// scenario drives one flow through refreshes and keeps, next to its target
// t, a table ref maintained by the definition of each refresh (design §1),
// written here in plain SQL: DELETE FROM ref WHERE P, then INSERT INTO ref
// SELECT cols FROM (query) src WHERE P, with P the window (or override) the
// refresh ran with; a full refresh truncates instead; DML on the target is
// run on ref too. After every refresh the target must equal ref: whatever
// rwc recomputed (some partitions, the whole window), the result is that of
// recomputing the whole window.
type scenario struct {
	t   *testing.T
	e   *env
	f   *flowT
	now time.Time
}

func newScenario(t *testing.T, e *env, spec string) *scenario {
	t.Helper()
	s := &scenario{t: t, e: e, now: now0}
	s.load(spec)
	var defs []string
	for _, c := range s.f.Table.Columns {
		defs = append(defs, c.Name+" "+c.Type.Canonical)
	}
	e.exec(`CREATE TABLE ref (` + strings.Join(defs, ", ") + `)`)
	return s
}

// newDailyScenario is dailySpec's flow over ev, seeded (newDailyEnv).
func newDailyScenario(t *testing.T) *scenario {
	t.Helper()
	return newScenario(t, newDailyEnv(t), dailySpec)
}

// load replaces the flow by the one in spec (a changed spec file).
func (s *scenario) load(spec string) { s.f = flow(s.t, map[string]string{"p.yaml": spec}, "t") }

func (s *scenario) columns() string {
	var cols []string
	for _, c := range s.f.Table.Columns {
		cols = append(cols, c.Name)
	}
	return strings.Join(cols, ", ")
}

// run runs one refresh of the flow and the same by definition on ref, and
// checks the target against ref and the refresh's event.
func (s *scenario) run(mode run.Mode, override string) run.Result {
	s.t.Helper()
	req := run.Request{Flow: s.f, Mode: mode}
	if mode == run.Override {
		req.Where = where(s.t, s.f, override)
	}
	res := refresh(s.t, s.e.runner(s.now), req)
	del := "DELETE FROM ref WHERE " + res.PredicateSQL
	if mode == run.Full {
		del = "TRUNCATE ref"
	}
	cols := s.columns()
	s.e.exec(del + "; INSERT INTO ref (" + cols + ") SELECT " + cols + " FROM (" +
		strings.TrimRight(strings.TrimSpace(s.f.Table.Query.Value), ";") + "\n) src WHERE " + res.PredicateSQL)
	s.check(res)
	return res
}

func (s *scenario) refresh() run.Result { s.t.Helper(); return s.run(run.Window, "") }

// check compares the target with ref, and the last event with res.
func (s *scenario) check(res run.Result) {
	s.t.Helper()
	pgtest.SameRows(s.t, fmt.Sprintf("target after %s %v (partitions %v), against the whole window recomputed", res.Action, res.Reasons, res.Partitions),
		s.e.rows(`SELECT * FROM t`), s.e.rows(`SELECT * FROM ref`))
	evs, err := run.Events(context.Background(), s.e.db, "t", 1)
	if err != nil || len(evs) != 1 {
		s.t.Fatalf("events: %v, %v", evs, err)
	}
	ev := evs[0]
	if ev.Kind != "planning_information" || ev.Action != res.Action || fmt.Sprint(ev.Reasons) != fmt.Sprint(res.Reasons) ||
		ev.RowsDeleted != res.RowsDeleted || ev.RowsInserted != res.RowsInserted {
		s.t.Fatalf("event %s %s %v -%d +%d, want the result's %s %v -%d +%d",
			ev.Kind, ev.Action, ev.Reasons, ev.RowsDeleted, ev.RowsInserted, res.Action, res.Reasons, res.RowsDeleted, res.RowsInserted)
	}
	var logged []string
	if err := json.Unmarshal([]byte(s.e.value(`SELECT details->'partitions' FROM rwc.events WHERE flow = 't' ORDER BY id DESC LIMIT 1`)), &logged); err != nil {
		s.t.Fatalf("event details partitions: %v", err)
	}
	if fmt.Sprintf("%q", logged) != fmt.Sprintf("%q", res.Partitions) {
		s.t.Fatalf("event details partitions %q, want %q", logged, res.Partitions)
	}
}

// dml runs a statement on the target and, identically, on ref; %s in
// stmt is the table.
func (s *scenario) dml(stmt string) {
	s.t.Helper()
	s.e.exec(fmt.Sprintf(stmt, "t"))
	s.e.exec(fmt.Sprintf(stmt, "ref"))
}

// expectPartitions fails unless res is incremental over exactly days.
func expectPartitions(t testing.TB, res run.Result, days ...string) {
	t.Helper()
	checkOutcome(t, res, compile.ActionIncremental)
	if days == nil {
		days = []string{}
	}
	got := append([]string{}, res.Partitions...)
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", days) {
		t.Fatalf("incremental refresh recomputed partitions %q, want %q", got, days)
	}
}

const (
	dimensionSpec = `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      name: text
      v: integer
    query: |
      SELECT e.d, e.k, n.name, e.v
      FROM ev e JOIN names n ON e.k = n.k -- rwc:nolint RW403
`
)

// Each reason code of design §1 happens in a real refresh: the result and
// the event log say so, the target equals the whole window recomputed, and
// the next ordinary refresh after a fallback, an override or a full
// refresh is incremental again (recomputing just the day that changed)
// unless the flow itself rules that out.
func TestEachReasonCode(t *testing.T) {
	t.Parallel()
	uncovered := map[compile.Reason]bool{}
	for _, r := range []compile.Reason{compile.ReasonFirstRefresh, compile.ReasonQueryChanged, compile.ReasonExternalChange,
		compile.ReasonPriorNotDeterministic, compile.ReasonPriorPredicateMissing, compile.ReasonStaleTargetData, compile.ReasonCannotPushPredicate,
		compile.ReasonBackfill, compile.ReasonFullRefreshRequested} {
		uncovered[r] = true
	}
	for _, tc := range []struct {
		name    string
		reason  compile.Reason
		spec    string                       // the flow at first; dailySpec if empty
		trigger func(s *scenario) run.Result // the refresh with the reason
		action  compile.Action
		reasons []compile.Reason // all the reasons the refresh gives
		// next: the reasons of the refresh after a change to 03-09; nil
		// means an incremental refresh of that day alone.
		next []compile.Reason
	}{
		{name: "first refresh", reason: compile.ReasonFirstRefresh,
			trigger: func(s *scenario) run.Result { return s.refresh() },
			action:  compile.ActionCreate, reasons: []compile.Reason{compile.ReasonFirstRefresh}},
		{name: "query changed", reason: compile.ReasonQueryChanged,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.load(strings.Replace(dailySpec, "SELECT d, k, v FROM", "SELECT d, k, v * 2 AS v FROM", 1))
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonQueryChanged}},
		{name: "column added", reason: compile.ReasonQueryChanged,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.load(strings.Replace(strings.Replace(dailySpec, "      v: integer\n", "      v: integer\n      w: integer\n", 1),
					"SELECT d, k, v FROM", "SELECT d, k, v, -v AS w FROM", 1))
				s.e.exec(`ALTER TABLE ref ADD COLUMN w integer`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonQueryChanged}},
		{name: "external change in the window", reason: compile.ReasonExternalChange,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				// Outside the window DML is kept and is no reason.
				s.dml(`INSERT INTO %s VALUES ('2026-03-01', 'dml', 1)`)
				expectPartitions(s.t, s.refresh())
				s.dml(`UPDATE %s SET v = -v WHERE d = '2026-03-10' AND k = 'a'`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonExternalChange}},
		{name: "target truncated", reason: compile.ReasonExternalChange,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.dml(`TRUNCATE %s`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonExternalChange}},
		{name: "prior not deterministic", reason: compile.ReasonPriorNotDeterministic,
			trigger: func(s *scenario) run.Result {
				// An rwc before RW211 refused rand() in replace_where stored
				// such windows; rand() < 2.0 is always true, so the reference
				// can follow.
				s.refresh()
				s.e.exec(`UPDATE rwc.flows SET predicate_cel = predicate_cel || ' && rand() < 2.0', determinism = 'non_deterministic' WHERE flow = 't'`)
				return s.refresh()
			},
			// The prior window had an atom rwc cannot reason about: it cannot
			// prove the new window lies inside it either.
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonPriorNotDeterministic, compile.ReasonStaleTargetData}},
		{name: "prior predicate missing from the state", reason: compile.ReasonPriorPredicateMissing,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.e.exec(`UPDATE rwc.flows SET predicate_cel = NULL WHERE flow = 't'`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonPriorPredicateMissing}},
		{name: "prior predicate no longer compiles", reason: compile.ReasonPriorPredicateMissing,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.e.exec(`UPDATE rwc.flows SET predicate_cel = 'd >= no_such_function()' WHERE flow = 't'`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonPriorPredicateMissing}},
		{name: "prior fingerprints missing", reason: compile.ReasonPriorPredicateMissing,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.e.exec(`DELETE FROM rwc.fingerprints WHERE flow = 't'`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonPriorPredicateMissing}},
		{name: "predicate widened", reason: compile.ReasonStaleTargetData,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.load(strings.Replace(dailySpec, "-2)", "-4)", 1))
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonStaleTargetData}},
		{name: "moving upper bound", reason: compile.ReasonStaleTargetData,
			trigger: func(s *scenario) run.Result {
				s.load(strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date_add(current_date(), -3) && d <= current_date()", 1))
				s.now = at(-1)
				s.refresh()
				s.now = now0
				return s.refresh()
			},
			// The next refresh is at the same time: the window has not moved.
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonStaleTargetData}},
		{name: "dimension changed", reason: compile.ReasonCannotPushPredicate, spec: dimensionSpec,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				s.e.exec(`UPDATE names SET name = 'alpha' WHERE k = 'a'`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "predicate not pushable (LIMIT)", reason: compile.ReasonCannotPushPredicate,
			trigger: func(s *scenario) run.Result {
				s.load(strings.Replace(dailySpec, "SELECT d, k, v FROM ev", "SELECT d, k, v FROM ev LIMIT 1000", 1))
				s.refresh()
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate},
			next: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "predicate over two columns", reason: compile.ReasonCannotPushPredicate,
			trigger: func(s *scenario) run.Result {
				s.load(strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date_add(current_date(), -2) && k != 'z'", 1))
				s.refresh()
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate},
			next: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "window holds NULL partition values", reason: compile.ReasonCannotPushPredicate,
			trigger: func(s *scenario) run.Result {
				// TRUE for a NULL date too: no list of dates names those rows.
				s.load(strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date_add(current_date(), -2) || true", 1))
				s.e.exec(`INSERT INTO ev VALUES (NULL, 'n', 1), (NULL, '', 2)`)
				s.refresh()
				s.e.exec(`UPDATE ev SET v = v + 1 WHERE d IS NULL`)
				return s.refresh()
			},
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate},
			next: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "source is a view", reason: compile.ReasonCannotPushPredicate,
			trigger: func(s *scenario) run.Result {
				s.e.exec(`CREATE VIEW ev_view AS SELECT * FROM ev`)
				s.load(strings.Replace(dailySpec, "FROM ev", "FROM ev_view", 1))
				s.refresh()
				return s.refresh()
			},
			// A view's rows have no identity to fingerprint: rwc cannot
			// know what changed in it.
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate},
			next: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "a partition of the source is a foreign table", reason: compile.ReasonCannotPushPredicate,
			trigger: func(s *scenario) run.Result {
				s.e.exec(`CREATE EXTENSION file_fdw; CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
					CREATE TABLE evf (d date, k text, v integer) PARTITION BY RANGE (d);
					CREATE TABLE evf_mar PARTITION OF evf FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
					CREATE FOREIGN TABLE evf_feb PARTITION OF evf FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')
						SERVER files OPTIONS (filename '/dev/null', format 'csv');
					INSERT INTO evf SELECT * FROM ev`)
				s.load(strings.Replace(dailySpec, "FROM ev", "FROM evf", 1))
				s.refresh()
				return s.refresh()
			},
			// Found by walking the source's partition tree: the foreign
			// table's (ctid, xmin) say nothing about the remote rows.
			action: compile.ActionRecomputeWindow, reasons: []compile.Reason{compile.ReasonCannotPushPredicate},
			next: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "override", reason: compile.ReasonBackfill,
			trigger: func(s *scenario) run.Result {
				s.refresh()
				// Outside the window: the override recomputes it.
				s.e.exec(`UPDATE ev SET v = v + 1000 WHERE d < '2026-03-08'`)
				return s.run(run.Override, `d >= date('2026-03-03') && d <= date('2026-03-08')`)
			},
			action: compile.ActionBackfill, reasons: []compile.Reason{compile.ReasonBackfill}},
		{name: "full refresh", reason: compile.ReasonFullRefreshRequested,
			trigger: func(s *scenario) run.Result {
				s.now = at(-3)
				s.refresh()
				s.now = now0
				s.refresh()
				s.dml(`INSERT INTO %s VALUES ('2026-03-09', 'dml', 1)`)
				return s.run(run.Full, "")
			},
			action: compile.ActionFullRefresh, reasons: []compile.Reason{compile.ReasonFullRefreshRequested}},
	} {
		delete(uncovered, tc.reason)
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(`CREATE TABLE names (k text PRIMARY KEY, name text); INSERT INTO names VALUES ('a', 'A'), ('b', 'B')`)
			spec := tc.spec
			if spec == "" {
				spec = dailySpec
			}
			s := newScenario(t, e, spec)
			res := tc.trigger(s)
			checkOutcome(t, res, tc.action, tc.reasons...)
			if !slices.Contains(res.Reasons, tc.reason) {
				t.Fatalf("reasons %v do not include %s", res.Reasons, tc.reason)
			}

			// Then a late change to one day of the window.
			e.exec(`UPDATE ev SET v = v + 100 WHERE d = '2026-03-09'`)
			next := s.refresh()
			if tc.next == nil {
				expectPartitions(t, next, "2026-03-09")
			} else {
				checkOutcome(t, next, compile.ActionRecomputeWindow, tc.next...)
			}
			// And nothing more to do.
			if tc.next == nil {
				expectPartitions(t, s.refresh())
			}
		})
	}
	if len(uncovered) > 0 {
		t.Errorf("no case for reasons %v", uncovered)
	}
}

// Every way a source's rows can change shows in its fingerprints, whether
// or not a trigger would have fired: the changed partitions are recomputed
// (or the window falls back), and the target ends equal to the whole window
// recomputed.
func TestIncrementalSeesEveryChange(t *testing.T) {
	t.Parallel()
	partitionedSpec := strings.Replace(dailySpec, "FROM ev", "FROM evp", 1)
	for _, tc := range []struct {
		name   string
		spec   string
		change func(s *scenario)
		// partitions recomputed; nil: the refresh falls back with reasons
		partitions    []string
		reasons       []compile.Reason
		anyPartitions bool // incremental, whatever partitions it recomputes
	}{
		{name: "insert, update, delete", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`INSERT INTO ev VALUES ('2026-03-12', 'c', 1); UPDATE ev SET v = 0 WHERE d = '2026-03-08' AND k = 'a';
				DELETE FROM ev WHERE d = '2026-03-05'`)
		}, partitions: []string{"2026-03-08", "2026-03-12"}},
		{name: "a day emptied", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`DELETE FROM ev WHERE d = '2026-03-09'`)
		}, partitions: []string{"2026-03-09"}},
		{name: "row moved to another day", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`UPDATE ev SET d = '2026-03-04' WHERE d = '2026-03-10' AND k = 'b'; UPDATE ev SET d = '2026-03-08' WHERE d = '2026-03-02' AND k = 'a'`)
		}, partitions: []string{"2026-03-08", "2026-03-10"}},
		{name: "update to the same values", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`UPDATE ev SET v = v WHERE d = '2026-03-10'`)
		}, partitions: []string{"2026-03-10"}},
		{name: "truncate", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`TRUNCATE ev`)
		}, partitions: []string{"2026-03-08", "2026-03-09", "2026-03-10"}},
		{name: "triggers disabled", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`CREATE TABLE audit (n int);
				CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (1); RETURN NULL; END $$;
				CREATE TRIGGER ev_audit AFTER INSERT OR UPDATE OR DELETE ON ev FOR EACH STATEMENT EXECUTE FUNCTION audit();
				ALTER TABLE ev DISABLE TRIGGER ALL;
				UPDATE ev SET v = -1 WHERE d = '2026-03-09';
				ALTER TABLE ev ENABLE TRIGGER ALL`)
			if n := s.e.count(`SELECT count(*) FROM audit`); n != 0 {
				s.t.Fatalf("setup: the disabled trigger fired %d times", n)
			}
		}, partitions: []string{"2026-03-09"}},
		{name: "dropped and recreated with the same rows", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`CREATE TABLE ev_copy AS SELECT * FROM ev; DROP TABLE ev; ALTER TABLE ev_copy RENAME TO ev`)
		}, partitions: []string{"2026-03-08", "2026-03-09", "2026-03-10"}},
		{name: "dropped and recreated with other rows", spec: dailySpec, change: func(s *scenario) {
			s.e.exec(`DROP TABLE ev; CREATE TABLE ev (d date, k text, v integer); INSERT INTO ev VALUES ('2026-03-09', 'z', 9), ('2026-03-01', 'z', 1)`)
		}, partitions: []string{"2026-03-08", "2026-03-09", "2026-03-10"}},
		{name: "rewritten by VACUUM FULL", spec: dailySpec, change: func(s *scenario) {
			// Rows move when the deleted ones can be removed (when no
			// snapshot still needs them): then every day is recomputed,
			// needlessly and harmlessly; otherwise none is.
			s.e.exec(`DELETE FROM ev WHERE d = '2026-03-01'`)
			s.e.exec(`VACUUM FULL ev`)
		}, anyPartitions: true},
		{name: "partition exchanged for one written by the same transaction", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`ALTER TABLE evp DETACH PARTITION evp_w2; ALTER TABLE evp ATTACH PARTITION evp_swap FOR VALUES FROM ('2026-03-10') TO ('2026-03-11')`)
		}, partitions: []string{"2026-03-10"}},
		{name: "DML aimed at a partition", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`UPDATE evp_w1 SET v = v + 1 WHERE d = '2026-03-09'; DELETE FROM evp_old WHERE d = '2026-03-07'`)
		}, partitions: []string{"2026-03-09"}},
		{name: "row moved across partitions", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`UPDATE evp SET d = '2026-03-10' WHERE d = '2026-03-08' AND k = 'a'`)
		}, partitions: []string{"2026-03-08", "2026-03-10"}},
		{name: "partition attached", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`CREATE TABLE evp_late (d date, k text, v integer);
				INSERT INTO evp_late VALUES ('2026-03-11', 'a', 11), ('2026-03-12', 'a', 12);
				ALTER TABLE evp ATTACH PARTITION evp_late FOR VALUES FROM ('2026-03-11') TO ('2026-03-13')`)
		}, partitions: []string{"2026-03-11", "2026-03-12"}},
		{name: "partition detached", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`ALTER TABLE evp DETACH PARTITION evp_w1`)
		}, partitions: []string{"2026-03-08", "2026-03-09"}},
		{name: "partition detached concurrently", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`ALTER TABLE evp DETACH PARTITION evp_w2 CONCURRENTLY`)
		}, partitions: []string{"2026-03-10"}},
		{name: "partition truncated", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`TRUNCATE evp_w1`)
		}, partitions: []string{"2026-03-08", "2026-03-09"}},
		{name: "partition dropped and recreated", spec: partitionedSpec, change: func(s *scenario) {
			s.e.exec(`CREATE TABLE keep AS SELECT * FROM evp_w2; DROP TABLE evp_w2;
				CREATE TABLE evp_w2 PARTITION OF evp FOR VALUES FROM ('2026-03-10') TO ('2026-03-11');
				INSERT INTO evp_w2 SELECT * FROM keep`)
		}, partitions: []string{"2026-03-10"}},
		{name: "self-join on another key", spec: strings.Replace(dailySpec, "SELECT d, k, v FROM ev",
			"SELECT a.d, a.k, (SELECT max(b.v) FROM ev b WHERE b.k = a.k) AS v FROM ev a", 1), change: func(s *scenario) {
			// Outside the window, yet every row of k a in it changes.
			s.e.exec(`UPDATE ev SET v = 9999 WHERE d = '2026-03-01' AND k = 'a'`)
		}, reasons: []compile.Reason{compile.ReasonCannotPushPredicate}},
		{name: "joined to itself on the date", spec: strings.Replace(dailySpec, "SELECT d, k, v FROM ev",
			"SELECT a.d, a.k, a.v + b.v AS v FROM ev a JOIN ev b ON a.d = b.d AND b.k = 'a'", 1), change: func(s *scenario) {
			s.e.exec(`UPDATE ev SET v = 0 WHERE d = '2026-03-09' AND k = 'a'; UPDATE ev SET v = 0 WHERE d = '2026-03-01'`)
		}, partitions: []string{"2026-03-09"}},
		{name: "column renamed in a subquery", spec: strings.Replace(dailySpec, "SELECT d, k, v FROM ev",
			"SELECT x.day AS d, x.k, x.v FROM (SELECT d AS day, k, v FROM ev) x", 1), change: func(s *scenario) {
			s.e.exec(`UPDATE ev SET v = 0 WHERE d = '2026-03-10'`)
		}, partitions: []string{"2026-03-10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(`CREATE TABLE evp (d date, k text, v integer) PARTITION BY RANGE (d);
				CREATE TABLE evp_old PARTITION OF evp FOR VALUES FROM ('2026-01-01') TO ('2026-03-08');
				CREATE TABLE evp_w1 PARTITION OF evp FOR VALUES FROM ('2026-03-08') TO ('2026-03-10');
				CREATE TABLE evp_w2 PARTITION OF evp FOR VALUES FROM ('2026-03-10') TO ('2026-03-11');
				CREATE TABLE evp_swap (d date, k text, v integer)`)
			// evp and evp_swap (the same day, other values) written by one
			// transaction: their row versions have equal ctid and xmin.
			e.exec(`BEGIN; INSERT INTO evp SELECT * FROM ev;
				INSERT INTO evp_swap SELECT d, k, v + 1000 FROM ev WHERE d = '2026-03-10'; COMMIT`)
			s := newScenario(t, e, tc.spec)
			// Two refreshes: days 03-05.. are in the target, 03-05..07 have
			// left the window.
			s.now = at(-3)
			s.refresh()
			s.now = now0
			expectPartitions(t, s.refresh())

			tc.change(s)
			res := s.refresh()
			switch {
			case tc.anyPartitions:
				checkOutcome(t, res, compile.ActionIncremental)
			case tc.partitions != nil:
				expectPartitions(t, res, tc.partitions...)
			default:
				checkOutcome(t, res, compile.ActionRecomputeWindow, tc.reasons...)
			}
			if tc.reasons == nil {
				expectPartitions(t, s.refresh())
			}
		})
	}
}

// Partition values of every kind incremental refresh supports go through
// the narrowed window and back: integers (negative too) and text with
// quotes, backslashes and non-ASCII; and more changed partitions than rwc
// lists one by one are recomputed as the range they span.
func TestIncrementalPartitionTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, setup, change string
		partitions                []string
	}{
		{name: "integer", spec: `pipeline: p
tables:
  t:
    replace_where: n >= -5 && n < 100
    columns:
      n: integer
      v: integer
    query: |
      SELECT n, v FROM src
`, setup: `CREATE TABLE src (n int, v int); INSERT INTO src SELECT i % 150 - 20, i FROM generate_series(1, 600) i`,
			change:     `UPDATE src SET v = -v WHERE n IN (-3, 7, 99, 120, -10)`,
			partitions: []string{"-3", "7", "99"}},
		{name: "text", spec: `pipeline: p
tables:
  t:
    replace_where: k >= "a" || k in ["", "Z"]
    columns:
      k: text
      v: integer
    query: |
      SELECT k, v FROM src
`, setup: `CREATE TABLE src (k text, v int);
			INSERT INTO src VALUES ('a''b', 1), ('back\slash', 2), ('dq"x', 3), ('émoji 🎉', 4), ('', 5), ('Z', 6), ('Y', 7), ('tab	x', 8), ('nl
x', 9)`,
			change:     `UPDATE src SET v = v + 10`,
			partitions: []string{"", "Z", "a'b", "back\\slash", "dq\"x", "nl\nx", "tab\tx", "émoji 🎉"}},
		{name: "more than 200 changed", spec: `pipeline: p
tables:
  t:
    replace_where: n >= 10
    columns:
      n: integer
      v: integer
    query: |
      SELECT n, v FROM src
`, setup: `CREATE TABLE src (n int, v int); INSERT INTO src SELECT i, i FROM generate_series(1, 500) i`,
			change: `UPDATE src SET v = v + 1 WHERE n % 2 = 0 AND n BETWEEN 20 AND 480`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.exec(tc.setup)
			s := newScenario(t, e, tc.spec)
			s.refresh()
			expectPartitions(t, s.refresh())
			e.exec(tc.change)
			res := s.refresh()
			if tc.partitions != nil {
				expectPartitions(t, res, tc.partitions...)
				return
			}
			checkOutcome(t, res, compile.ActionIncremental)
			if len(res.Partitions) != 231 {
				t.Errorf("%d partitions, want the 231 that changed", len(res.Partitions))
			}
			// The range 20..480 was recomputed: its 461 rows, no more.
			if res.RowsDeleted != 461 || res.RowsInserted != 461 {
				t.Errorf("-%d +%d, want the range 20..480 (461 rows) recomputed", res.RowsDeleted, res.RowsInserted)
			}
			expectPartitions(t, s.refresh())
		})
	}
}

// After an override, DML made inside the window before it still shows:
// the override stores the target's fingerprint for its own writes, not
// to excuse writes nobody asked rwc to make.
func TestOverrideDoesNotHideExternalChange(t *testing.T) {
	t.Parallel()
	s := newDailyScenario(t)
	e := s.e
	s.refresh()
	s.dml(`INSERT INTO %s VALUES ('2026-03-09', 'dml', 1)`)
	checkOutcome(t, s.run(run.Override, `d == date('2026-03-02')`), compile.ActionBackfill, compile.ReasonBackfill)
	checkOutcome(t, s.refresh(), compile.ActionRecomputeWindow, compile.ReasonExternalChange)
	if n := e.count(`SELECT count(*) FROM t WHERE k = 'dml'`); n != 0 {
		t.Errorf("the DML row inside the window survived the refresh")
	}
	// An override with a clean target is no external change.
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`)
	checkOutcome(t, s.run(run.Override, `d >= date('2026-03-09')`), compile.ActionBackfill, compile.ReasonBackfill)
	expectPartitions(t, s.refresh(), "2026-03-10")
	// An override before the flow's first refresh leaves it a first refresh.
	e2 := newEnv(t)
	e2.seedDaily()
	s2 := newScenario(t, e2, dailySpec)
	checkOutcome(t, s2.run(run.Override, `d == date('2026-03-09')`), compile.ActionBackfill, compile.ReasonBackfill)
	checkOutcome(t, s2.refresh(), compile.ActionCreate, compile.ReasonFirstRefresh)
}

// A window with no rows at all (sources and target empty in it) is still
// one whose fingerprints were taken: the next refresh is incremental, not
// PRIOR_REPLACE_WHERE_PREDICATE_MISSING.
func TestEmptyWindowStaysIncremental(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	s := newScenario(t, e, strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date('2026-04-01')", 1))
	checkOutcome(t, s.refresh(), compile.ActionCreate, compile.ReasonFirstRefresh)
	expectPartitions(t, s.refresh())
	e.exec(`INSERT INTO ev VALUES ('2026-04-02', 'a', 1)`)
	expectPartitions(t, s.refresh(), "2026-04-02")
	e.exec(`DELETE FROM ev WHERE d = '2026-04-02'`)
	expectPartitions(t, s.refresh(), "2026-04-02")
}

// Repeated window refreshes on a table do not grow it without bound: the
// target is vacuumed once its refreshes left four windows' worth of dead
// rows, so later refreshes reuse the space. (Here the window is 30% of the
// table; without VACUUM, 40 refreshes would leave 40 generations.) By rwc
// here, autovacuum being off on the table; by autovacuum in
// TestAutovacuumKeepsTargetHealthy.
func TestRepeatedRefreshesKeepTargetSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, size := churnedTarget(t, e)
	e.exec(`ALTER TABLE t SET (autovacuum_enabled = off)`)
	first, mid, last := size(1), size(10), size(30)
	// Room for the live rows and up to four windows' worth of dead ones (a
	// window here is 30% of the table), as long as the refreshes go on; no
	// more after 40 refreshes than after 10. Without VACUUM the table would
	// hold 41 generations of the window, 13 times the table's live rows.
	if last > mid || float64(last) > 3*float64(first) {
		t.Errorf("the target grew from %d bytes after 1 refresh to %d after 11 and %d after 41", first, mid, last)
	}
	if dead := s.e.count(`SELECT dead_rows FROM rwc.flows`); dead >= 12000 {
		t.Errorf("rwc.flows.dead_rows = %d after a refresh, want under four windows (12000): it should have vacuumed", dead)
	}
}

// On a server whose autovacuum runs, autovacuum keeps the target healthy
// at the threshold rwc gave it, four windows' worth of dead rows, and rwc
// never vacuums it. The target holds 100 windows of history: by its
// default settings, autovacuum would wait for a fifth of it, 20 windows,
// to be dead. Two refreshes come to each of autovacuum's visits (every
// second here, every minute by default), as a flow refreshed every half
// minute would; the server counts dead rows up to a second late.
func TestAutovacuumKeepsTargetHealthy(t *testing.T) {
	t.Parallel()
	e := newServerEnv(t, "autovacuum_naptime = 1s")
	s, refresh := churnedTarget(t, e)
	s.dml(`INSERT INTO %s SELECT DATE '2025-03-01' + i %% 300, 'history', i FROM generate_series(1, 300000) i`)
	e.exec(`ANALYZE t`)
	var peak int64
	for range 30 {
		time.Sleep(500 * time.Millisecond)
		refresh(1)
		peak = max(peak, e.count(`SELECT dead_rows FROM rwc.flows`))
	}
	t.Logf("peak %d", peak)
	if peak >= 15*3000 {
		t.Errorf("up to %d dead rows in the target; want autovacuum to have run at four windows' worth (12,000) and a few refreshes after", peak)
	}
	if n := e.count(`SELECT pg_stat_get_autovacuum_count('t'::regclass)`); n == 0 {
		t.Errorf("autovacuum never vacuumed the target in 30 refreshes")
	}
	if n := e.count(`SELECT pg_stat_get_vacuum_count('t'::regclass)`); n != 1 {
		t.Errorf("rwc vacuumed the target %d times; want once, at its creation", n)
	}
}

// churnedTarget is a target whose window holds 3 of 10 days, 3000 rows of
// a 10,000-row table, created by a first refresh; refresh(n) refreshes the
// window n times (changing all of it first each time) and returns the
// table's size.
func churnedTarget(t *testing.T, e *env) (*scenario, func(n int) int64) {
	t.Helper()
	e.exec(`CREATE TABLE ev (d date, k text, v integer);
		INSERT INTO ev SELECT DATE '2026-03-01' + i % 10, 'k' || i, i FROM generate_series(1, 10000) i`)
	s := newScenario(t, e, dailySpec)
	s.refresh()
	return s, func(n int) int64 {
		t.Helper()
		for range n {
			e.exec(`UPDATE ev SET v = v + 1 WHERE d >= '2026-03-08'`)
			res := s.refresh()
			if res.RowsDeleted != 3000 || res.RowsInserted != 3000 {
				t.Fatalf("refresh -%d +%d, want the window's 3000 rows recomputed", res.RowsDeleted, res.RowsInserted)
			}
		}
		return e.count(`SELECT pg_relation_size('t')`)
	}
}

// An override stores the target's fingerprints again over the window the
// last refresh recorded, not over the spec's window now (narrowed in the
// work tree, or moved on with time): back on that window, the next refresh
// finds nothing external.
func TestOverrideUnderNarrowerSpecKeepsFingerprints(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	wide := strings.Replace(dailySpec, "-2)", "-3)", 1)
	s := newScenario(t, e, wide)
	s.refresh()
	s.load(dailySpec)
	checkOutcome(t, s.run(run.Override, `d == date('2026-03-01')`), compile.ActionBackfill, compile.ReasonBackfill)
	s.load(wide)
	expectPartitions(t, s.refresh())

	// Or a day later, when the window has moved on: the override rewrites
	// 03-07, which the last refresh's window held and today's does not;
	// the window widened back by a day is that window again.
	e2 := newEnv(t)
	e2.seedDaily()
	s2 := newScenario(t, e2, wide)
	s2.refresh()
	s2.now = at(1)
	checkOutcome(t, s2.run(run.Override, `d >= date('2026-03-06') && d <= date('2026-03-08')`), compile.ActionBackfill, compile.ReasonBackfill)
	s2.load(strings.Replace(dailySpec, "-2)", "-4)", 1))
	expectPartitions(t, s2.refresh())
}

// A partition value Go cannot parse ('infinity' in a date window) is never
// rewritten by an incremental refresh of other days, so its target
// fingerprint is kept: the refresh after finds nothing external.
func TestIncrementalKeepsUnparsedPartitions(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`INSERT INTO ev VALUES ('infinity', 'a', 1)`)
	s := newScenario(t, e, dailySpec)
	s.refresh()
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	expectPartitions(t, s.refresh(), "2026-03-09")
	expectPartitions(t, s.refresh())
}

// With the server not counting vacuums (track_counts off), rwc still starts
// counting dead rows again after its own VACUUM, rather than vacuuming
// after every refresh from then on.
func TestDeadRowsResetWithoutTrackCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE ev (d date, k text, v integer);
		INSERT INTO ev SELECT DATE '2026-03-01' + i % 10, 'k' || i, i FROM generate_series(1, 1000) i`)
	e.exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_counts = off', current_database()); END $$`)
	e.db.SetMaxIdleConns(0) // new connections, with the setting
	s := newScenario(t, e, dailySpec)
	s.refresh()
	for i := range 16 {
		e.exec(`UPDATE ev SET v = v + 1 WHERE d >= '2026-03-08'`)
		s.refresh()
		// 300 rows a window; rwc vacuums at four windows, with a floor of
		// 1000 rows a window: at 4000, the 14th refresh.
		if dead := e.count(`SELECT dead_rows FROM rwc.flows`); dead >= 4000 {
			t.Fatalf("after refresh %d: rwc.flows.dead_rows = %d, want under 4000: its VACUUM did not reset it", i+2, dead)
		}
	}
}

// The partitions whose sources changed are written before the target's
// probe has answered; when it then finds DML by anyone else in the window,
// the whole window is recomputed on top, in the same transaction. The
// result and the counts are a whole-window recompute's; the rows written
// first and deleted again count as dead, for the vacuum.
func TestExternalChangeFoundAfterIncrementalWrite(t *testing.T) {
	t.Parallel()
	s := newDailyScenario(t)
	e := s.e
	s.refresh()
	dead := e.count(`SELECT dead_rows FROM rwc.flows WHERE flow = 't'`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-10', 'c', 7)`)           // a source changes one day
	s.dml(`UPDATE %s SET v = -v WHERE d = '2026-03-09' AND k = 'a'`) // someone else another
	res := s.refresh()
	checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
	// The window (03-08 to 03-10) held 6 rows and holds 7 now.
	if res.RowsDeleted != 6 || res.RowsInserted != 7 {
		t.Errorf("-%d +%d, want -6 +7: the window's rows, each counted once", res.RowsDeleted, res.RowsInserted)
	}
	// Dead: 03-10's 2 rows, then the 7 of the window (3 of them the
	// incremental write's).
	if got := e.count(`SELECT dead_rows FROM rwc.flows WHERE flow = 't'`); got != dead+9 {
		t.Errorf("dead_rows %d, want %d + 9", got, dead)
	}
	expectPartitions(t, s.refresh())
}

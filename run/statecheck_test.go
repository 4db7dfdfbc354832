package run_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// fixedSpec has a window that does not move with the clock, so that the
// rwc processes these tests run (at the real time) refresh the same rows:
// d >= 2026-03-08 is the window; the days before it are outside.
var fixedSpec = strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date('2026-03-08')", 1)

// healEnv is a deployed flow t with history: rows of the window from two
// refreshes, and rows outside it that only the target keeps (written by
// DML, their days since dropped from the source).
func healEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newDailyEnv(t)
	dir := writeSpecs(t, map[string]string{"p.yaml": fixedSpec})
	mustApply(t, e, dir)
	e.exec(`INSERT INTO t SELECT d, k, v FROM ev WHERE d < '2026-03-08'; DELETE FROM ev WHERE d < '2026-03-05'`)
	e.exec(`UPDATE ev SET v = v + 100`)
	mustApply(t, e, dir)
	return e, dir
}

// outside is every row of t outside the window, in order.
func (e *env) outside() []string {
	e.t.Helper()
	return e.rows(`SELECT d, k, v, ctid FROM t WHERE d < '2026-03-08' ORDER BY d, k, v`)
}

// stateReportJSON is the report rwc state check|repair --format json
// writes (run.StateReport), read as a script would.
type stateReportJSON struct {
	State    string `json:"state"`
	Findings []struct {
		Code   string `json:"code"`
		Object string `json:"object"`
	} `json:"findings"`
	Repaired []string `json:"repaired"`
}

func (r stateReportJSON) Healthy() bool { return len(r.Findings) == 0 }

// stateReport runs rwc state check|repair --format json.
func stateReport(t *testing.T, e *env, verb string, wantCode int) stateReportJSON {
	t.Helper()
	code, out := runRWC(t, e.dsn, "state", verb, "--format", "json")
	if code != wantCode {
		t.Fatalf("rwc state %s exited %d, want %d:\n%s", verb, code, wantCode, out)
	}
	var rep stateReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("rwc state %s --format json: %v\n%s", verb, err, out)
	}
	return rep
}

func hasFinding(rep stateReportJSON, code, object string) bool {
	for _, f := range rep.Findings {
		if f.Code == code && f.Object == object {
			return true
		}
	}
	return false
}

// noRawErrors fails when out has a driver's words instead of rwc's.
func noRawErrors(t *testing.T, what, out string) {
	t.Helper()
	for _, raw := range []string{"does not exist", "pq:", "already exists"} {
		if strings.Contains(out, raw) {
			t.Errorf("%s says %q, not in rwc's words:\n%s", what, raw, out)
		}
	}
}

// Damaged state heals: with a state table dropped, a column or a key gone,
// or the version number lowered, every command refuses in rwc's words and
// changes nothing; rwc state check says what is wrong; rwc state repair
// mends it, once (a second run changes nothing); and the next apply
// refreshes the flow, falling back to its whole window where the window or
// the fingerprints were lost, with every row outside the window as it was
// (the same row versions: not even rewritten).
func TestDamagedStateHeals(t *testing.T) {
	for _, c := range []struct {
		name, damage    string
		code, object    string
		reasons         string // of the refresh after the repair ("": any)
		historyKept     bool   // the event log's earlier records survive
		fingerprintKept bool
	}{
		{"events dropped", `DROP TABLE rwc.events`, "missing_table", "rwc.events", "", false, true},
		{"fingerprints dropped", `DROP TABLE rwc.fingerprints`, "missing_table", "rwc.fingerprints", "PRIOR_REPLACE_WHERE_PREDICATE_MISSING", true, false},
		{"flows dropped", `DROP TABLE rwc.flows`, "missing_table", "rwc.flows", "PRIOR_REPLACE_WHERE_PREDICATE_MISSING", true, false},
		{"version lowered", `UPDATE rwc.schema_version SET version = 2`, "schema_version", "rwc.schema_version", "PRIOR_REPLACE_WHERE_PREDICATE_MISSING", true, false},
		{"version row gone", `DELETE FROM rwc.schema_version`, "schema_version", "rwc.schema_version", "PRIOR_REPLACE_WHERE_PREDICATE_MISSING", true, false},
		{"flows identity column dropped", `ALTER TABLE rwc.flows DROP COLUMN target_oid`, "missing_column", "rwc.flows.target_oid", "PRIOR_REPLACE_WHERE_PREDICATE_MISSING", true, false},
		{"events column dropped", `ALTER TABLE rwc.events DROP COLUMN details`, "missing_column", "rwc.events.details", "", true, true},
		{"flows key dropped", `ALTER TABLE rwc.flows DROP CONSTRAINT flows_pkey`, "missing_key", "rwc.flows", "", true, true},
		{"events index dropped", `DROP INDEX rwc.events_flow`, "missing_key", "rwc.events", "", true, true},
		{"column retyped", `ALTER TABLE rwc.flows ALTER COLUMN query_fingerprint TYPE varchar(200)`, "wrong_column", "rwc.flows.query_fingerprint", "", true, true},
		{"serial default dropped", `ALTER TABLE rwc.events ALTER COLUMN id DROP DEFAULT`, "wrong_column", "rwc.events.id", "", true, true},
		{"not null dropped", `ALTER TABLE rwc.deployments ALTER COLUMN specs DROP NOT NULL`, "wrong_column", "rwc.deployments.specs", "", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, dir := healEnv(t)
			before := e.outside()
			if len(before) != 14 {
				t.Fatalf("setup: %d rows outside the window, want 14", len(before))
			}
			events := e.count(`SELECT count(*) FROM rwc.events`)
			e.exec(c.damage)
			state := func() string {
				return strings.Join(e.rows(`SELECT c.relname || '.' || a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
					JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rwc' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1`), ",") +
					strings.Join(e.rows(`SELECT * FROM rwc.schema_version`), ",")
			}
			damaged := state()

			// Every command that needs the state refuses, in rwc's words.
			e.exec(`UPDATE ev SET v = v + 1`)
			code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
			if code != 1 || !strings.Contains(out, "rwc's state (schema rwc) is damaged") || !strings.Contains(out, "rwc state repair") {
				t.Fatalf("apply on a damaged state exited %d:\n%s", code, out)
			}
			noRawErrors(t, "apply", out)
			for _, args := range [][]string{{"status"}, {"refresh", "--allow-dirty", "--specs", dir, "t"}} {
				code, out := runRWC(t, e.dsn, args...)
				if code != 1 || !strings.Contains(out, "is damaged") {
					t.Errorf("rwc %v on a damaged state exited %d:\n%s", args, code, out)
				}
				noRawErrors(t, args[0], out)
			}
			if state() != damaged {
				t.Fatalf("a refused command changed the state schema")
			}
			pgtest.SameRows(t, "rows outside the window after the refusals", e.outside(), before)

			rep := stateReport(t, e, "check", 2)
			if !hasFinding(rep, c.code, c.object) || rep.State != "damaged" {
				t.Fatalf("state check: want finding %s %s; got %+v", c.code, c.object, rep)
			}
			code, text := runRWC(t, e.dsn, "state", "check")
			if code != 2 || !strings.Contains(text, c.object) || !strings.Contains(text, "run rwc state repair") {
				t.Errorf("state check (text) exited %d:\n%s", code, text)
			}

			whole := e.rows(`SELECT t, ctid, xmin FROM t`)
			rep = stateReport(t, e, "repair", 0)
			if len(rep.Repaired) == 0 || !rep.Healthy() {
				t.Fatalf("state repair: %+v", rep)
			}
			pgtest.SameRows(t, "the target's rows and their versions after the repair", e.rows(`SELECT t, ctid, xmin FROM t`), whole)
			if again := stateReport(t, e, "repair", 0); len(again.Repaired) != 0 || !again.Healthy() {
				t.Fatalf("a second repair changed something: %+v", again)
			}
			if rep := stateReport(t, e, "check", 0); rep.State != "healthy" {
				t.Fatalf("state check after the repair: %+v", rep)
			}
			pgtest.SameRows(t, "rows outside the window after the repair", e.outside(), before)
			if got := e.count(`SELECT count(*) FROM rwc.events`); c.historyKept && got != events {
				t.Errorf("the event log holds %d records after the repair, want the %d it had", got, events)
			}
			if got := e.count(`SELECT count(*) FROM rwc.fingerprints`); (got > 0) != c.fingerprintKept {
				t.Errorf("%d fingerprints after the repair; kept: want %v", got, c.fingerprintKept)
			}

			out = mustApply(t, e, dir)
			if c.reasons != "" && !strings.Contains(out, "recompute_window ("+c.reasons+")") {
				t.Errorf("the apply after the repair did not recompute the window for %s:\n%s", c.reasons, out)
			}
			pgtest.SameRows(t, "rows outside the window after the apply", e.outside(), before)
			pgtest.SameRows(t, "the window after the apply",
				e.rows(`SELECT d, k, v FROM t WHERE d >= '2026-03-08' ORDER BY 1, 2`),
				e.rows(`SELECT d, k, v FROM ev WHERE d >= '2026-03-08' ORDER BY 1, 2`))
			// The flow is rwc's again, by the same table.
			if e.value(`SELECT target_oid = 't'::regclass FROM rwc.flows WHERE flow = 't'`) != "true" {
				t.Errorf("rwc.flows does not name t by its oid after the repair")
			}
		})
	}
}

// A flow's row deleted from rwc.flows (the target kept): apply refuses the
// table as not rwc's, as it must without that row; the event log shows that
// rwc created this very table, so rwc state repair re-adopts it with its
// rows and history, and the next apply recomputes the window only.
func TestRepairReadoptsTargetOfLostFlowRow(t *testing.T) {
	e, dir := healEnv(t)
	before := e.outside()
	events := e.rows(`SELECT id, action FROM rwc.events ORDER BY id`)
	e.exec(`DELETE FROM rwc.flows WHERE flow = 't'`)
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
	if code != 1 || !strings.Contains(out, "was not created by rwc") {
		t.Fatalf("apply without the flow's row exited %d:\n%s", code, out)
	}
	rep := stateReport(t, e, "check", 2)
	if !hasFinding(rep, "flow_row_missing", "flow t") {
		t.Fatalf("state check: %+v", rep)
	}
	rep = stateReport(t, e, "repair", 0)
	if !rep.Healthy() || len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], "re-adopted") {
		t.Fatalf("state repair: %+v", rep)
	}
	if again := stateReport(t, e, "repair", 0); len(again.Repaired) != 0 {
		t.Fatalf("a second repair changed something: %+v", again)
	}
	if got := e.value(`SELECT columns::text FROM rwc.flows WHERE flow = 't'`); got != `[{"name": "d", "type": "date"}, {"name": "k", "type": "text"}, {"name": "v", "type": "integer"}]` {
		t.Errorf("re-adopted columns: %s", got)
	}
	pgtest.SameRows(t, "the event log after the repair", e.rows(`SELECT id, action FROM rwc.events ORDER BY id`), events)
	e.exec(`UPDATE ev SET v = v + 1`)
	out = mustApply(t, e, dir)
	if !strings.Contains(out, "recompute_window (PRIOR_REPLACE_WHERE_PREDICATE_MISSING)") {
		t.Errorf("the apply after the re-adoption:\n%s", out)
	}
	pgtest.SameRows(t, "rows outside the window", e.outside(), before)
}

// A table rwc did not create is never adopted, whatever else the state
// says: one made by hand before any apply; one made by hand in place of a
// target rwc created (dropped) whose flow's row is gone too; and a target
// whose identity the event log never recorded (events from before rwc kept
// it). The user's rows stay as they were, and apply keeps refusing.
func TestRepairNeverAdoptsATableRWCDidNotCreate(t *testing.T) {
	refuses := func(t *testing.T, e *env, dir string) {
		t.Helper()
		code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
		if code != 1 || !strings.Contains(out, "rwc refuses to adopt it") {
			t.Fatalf("apply exited %d:\n%s", code, out)
		}
	}
	t.Run("made by hand", func(t *testing.T) {
		e := newDailyEnv(t)
		dir := writeSpecs(t, map[string]string{"p.yaml": fixedSpec})
		e.exec(`CREATE TABLE t (d date, k text, v integer); INSERT INTO t VALUES ('2026-03-09', 'mine', 1)`)
		refuses(t, e, dir)
		stateReport(t, e, "check", 0)
		stateReport(t, e, "repair", 0)
		if n := e.count(`SELECT count(*) FROM rwc.flows`); n != 0 {
			t.Fatalf("rwc.flows has %d rows after the repair", n)
		}
		refuses(t, e, dir)
		pgtest.SameRows(t, "the user's table", e.rows(`SELECT * FROM t`), []string{"(2026-03-09,mine,1)"})
	})
	t.Run("made by hand in place of rwc's", func(t *testing.T) {
		e, dir := healEnv(t)
		e.exec(`DROP TABLE t; CREATE TABLE t (d date, k text, v integer); INSERT INTO t VALUES ('2026-03-09', 'mine', 1);
			DELETE FROM rwc.flows WHERE flow = 't'`)
		rep := stateReport(t, e, "check", 2)
		if !hasFinding(rep, "not_adoptable", "flow t") {
			t.Fatalf("state check: %+v", rep)
		}
		rep = stateReport(t, e, "repair", 2)
		if len(rep.Repaired) != 0 || !hasFinding(rep, "not_adoptable", "flow t") {
			t.Fatalf("state repair: %+v", rep)
		}
		if n := e.count(`SELECT count(*) FROM rwc.flows`); n != 0 {
			t.Fatalf("rwc.flows has %d rows after the repair", n)
		}
		refuses(t, e, dir)
		pgtest.SameRows(t, "the user's table", e.rows(`SELECT * FROM t`), []string{"(2026-03-09,mine,1)"})
	})
	t.Run("no record of its identity", func(t *testing.T) {
		e, dir := healEnv(t)
		e.exec(`UPDATE rwc.events SET details = details - 'target'; DELETE FROM rwc.flows WHERE flow = 't'`)
		rows := e.rows(`SELECT * FROM t ORDER BY 1, 2, 3`)
		rep := stateReport(t, e, "check", 2)
		if !hasFinding(rep, "not_adoptable", "flow t") {
			t.Fatalf("state check: %+v", rep)
		}
		code, text := runRWC(t, e.dsn, "state", "repair")
		if code != 2 || !strings.Contains(text, "no record of its target's identity") || !strings.Contains(text, "rwc state repair cannot mend this: it needs you") {
			t.Fatalf("state repair exited %d:\n%s", code, text)
		}
		refuses(t, e, dir)
		pgtest.SameRows(t, "the table", e.rows(`SELECT * FROM t ORDER BY 1, 2, 3`), rows)
	})
}

// rwc state check reports a flow whose target is gone, or was dropped and
// created again outside rwc; neither is the repair's to mend.
func TestStateCheckTargets(t *testing.T) {
	e, _ := healEnv(t)
	e.exec(`DROP TABLE t`)
	rep := stateReport(t, e, "check", 2)
	if !hasFinding(rep, "target_missing", "flow t") {
		t.Fatalf("state check: %+v", rep)
	}
	e.exec(`CREATE TABLE t (d date, k text, v integer)`)
	rep = stateReport(t, e, "check", 2)
	if !hasFinding(rep, "target_replaced", "flow t") {
		t.Fatalf("state check: %+v", rep)
	}
	if rep := stateReport(t, e, "repair", 2); len(rep.Repaired) != 0 {
		t.Fatalf("state repair changed something: %+v", rep)
	}
}

// rwc state repair waits for a lock on rwc's state no longer than
// --lock-timeout, says who holds it, and changes nothing.
func TestStateRepairLockTimeout(t *testing.T) {
	e, _ := healEnv(t)
	e.exec(`DROP TABLE rwc.events`)
	rwcBinary(t)
	pid, release := lockHolder(t, e, `LOCK TABLE rwc.flows IN ACCESS EXCLUSIVE MODE`)
	started := time.Now()
	code, out := runRWC(t, e.dsn, "state", "repair", "--lock-timeout", "300ms")
	took := time.Since(started)
	release()
	if code != 1 || took > 5*time.Second || !strings.Contains(out, "rwc state repair") || !strings.Contains(out, "pg_terminate_backend("+strconv.Itoa(pid)+")") {
		t.Fatalf("state repair under a lock exited %d after %s:\n%s", code, took, out)
	}
	noRawErrors(t, "state repair", out)
	if e.value(`SELECT to_regclass('rwc.events') IS NULL`) != "true" {
		t.Fatalf("the timed-out repair changed the state")
	}
}

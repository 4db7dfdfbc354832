package run_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// triggerSpec is the daily flow capturing by triggers.
var triggerSpec = dailySpec + "    capture: triggers\n"

// vouched refreshes the daily flow until its triggers vouch for every
// table (the first refresh installs them, the second stores what they
// vouch for) and checks that the third skips its probes.
func vouched(t *testing.T, e *env, spec string) *flowT {
	t.Helper()
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	for range 2 {
		refresh(t, e.runner(now0), reqWindow(f))
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") || len(res.Partitions) != 0 {
		t.Fatalf("third refresh: %s %v, capture %q; want nothing changed, unprobed", res.Action, res.Partitions, res.Capture)
	}
	return f
}

// recomputed checks that a refresh after change found it: the target
// equals the query's rows, and the capture says why it probed.
func recomputed(t *testing.T, e *env, f *flowT, why string) {
	t.Helper()
	res := refresh(t, e.runner(now0), reqWindow(f))
	if !strings.Contains(res.Capture, why) {
		t.Errorf("capture %q, want it to say %q", res.Capture, why)
	}
	if diff := e.rows(`(SELECT d, k, v FROM public.t WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= '2026-03-08')
		UNION ALL (SELECT d, k, v FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t WHERE d >= '2026-03-08')`); len(diff) > 0 {
		t.Errorf("the target's window differs from the query's rows (%s, %v): %v", res.Action, res.Partitions, diff)
	}
}

// What the triggers log, a refresh finds, and only the partitions changed
// are recomputed: each kind of write, the target's own DML, and a writer
// that was still running when a refresh looked (its change shows at the
// next one, which the stored snapshot did not see it in).
func TestCaptureTriggersLogged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, dml, why string }{
		{"insert", `INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, `"ev" changed`},
		{"update", `UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`, `"ev" changed`},
		{"delete", `DELETE FROM ev WHERE d = '2026-03-08' AND k = 'a'`, `"ev" changed`},
		// TRUNCATE gives the table a new file: its catalog row changes too.
		{"truncate", `CREATE TABLE ev_copy AS SELECT * FROM ev; TRUNCATE ev; INSERT INTO ev SELECT * FROM ev_copy WHERE k = 'a'`, `"ev" its trigger, or the table's definition, changed`},
		{"copy", `COPY ev FROM PROGRAM 'echo 2026-03-10,z,3' WITH (FORMAT csv)`, `"ev" changed`},
		{"target DML", `UPDATE public.t SET v = -1 WHERE d = '2026-03-09'`, `"public"."t" changed`},
		// The statement that logged first rolled back, the transaction's
		// later writes kept: the log's row went with the first, and the
		// next write logs again.
		{"savepoint rolled back", `BEGIN; SAVEPOINT a; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); ROLLBACK TO a;
			UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'; COMMIT`, `"ev" changed`},
		{"merge", `MERGE INTO ev USING (VALUES (DATE '2026-03-09', 'a')) s(d, k) ON ev.d = s.d AND ev.k = s.k WHEN MATCHED THEN UPDATE SET v = 0`, `"ev" changed`},
		{"through a view", `CREATE VIEW ev_view AS SELECT * FROM ev; DELETE FROM ev_view WHERE d = '2026-03-08'`, `"ev" changed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := vouched(t, e, triggerSpec)
			e.exec(c.dml)
			recomputed(t, e, f, c.why)
		})
	}
	t.Run("writer running meanwhile", func(t *testing.T) {
		t.Parallel()
		e := newDailyEnv(t)
		f := vouched(t, e, triggerSpec)
		tx, err := e.db.BeginTx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`INSERT INTO ev VALUES ('2026-03-10', 'late', 5)`); err != nil {
			t.Fatal(err)
		}
		// Logged, but not committed: this refresh cannot see it.
		if res := refresh(t, e.runner(now0), reqWindow(f)); len(res.Partitions) != 0 {
			t.Fatalf("refresh beside an uncommitted writer recomputed %v", res.Partitions)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		recomputed(t, e, f, `"ev" changed`)
		if got := e.value(`SELECT count(*) FROM public.t WHERE k = 'late'`); got != "1" {
			t.Errorf("the late writer's row is in the target %s times, want once", got)
		}
	})
	// Prepared (two-phase): in progress for every snapshot until COMMIT
	// PREPARED, however long after its session ended.
	t.Run("prepared writer", func(t *testing.T) {
		t.Parallel()
		e := newDailyEnv(t)
		f := vouched(t, e, triggerSpec)
		gid := e.value(`SELECT current_database()`)
		e.exec(fmt.Sprintf(`BEGIN; INSERT INTO ev VALUES ('2026-03-10', 'late', 5); PREPARE TRANSACTION '%s'`, gid))
		t.Cleanup(func() { e.db.Exec(fmt.Sprintf(`ROLLBACK PREPARED '%s'`, gid)) })
		if res := refresh(t, e.runner(now0), reqWindow(f)); len(res.Partitions) != 0 {
			t.Fatalf("refresh beside a prepared writer recomputed %v", res.Partitions)
		}
		e.exec(fmt.Sprintf(`COMMIT PREPARED '%s'`, gid))
		recomputed(t, e, f, `"ev" changed`)
	})
}

// Everything the triggers cannot vouch for is probed, and the probe finds
// what changed past them; the capture says which table and why.
func TestCaptureTriggersBlindSpots(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, setup, dml, why string }{
		{"disabled, written, enabled again", ``,
			`ALTER TABLE ev DISABLE TRIGGER rwc_capture; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); ALTER TABLE ev ENABLE ALWAYS TRIGGER rwc_capture`,
			`"ev" its trigger, or the table's definition, changed since the last refresh`},
		{"disabled", ``, `ALTER TABLE ev DISABLE TRIGGER ALL; INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, `"ev" its rwc_capture trigger is disabled`},
		{"origin only", ``, `ALTER TABLE ev ENABLE TRIGGER rwc_capture; BEGIN; SET LOCAL session_replication_role = replica; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); COMMIT`,
			`"ev" its rwc_capture trigger is disabled`},
		{"dropped", ``, `DROP TRIGGER rwc_capture ON ev; INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, `"ev" has no rwc_capture trigger`},
		{"replica trigger dropped", ``, `DROP TRIGGER rwc_capture_replica ON ev; INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`,
			`"ev" has no rwc_capture_replica trigger`},
		{"replica trigger disabled", ``, `ALTER TABLE ev DISABLE TRIGGER rwc_capture_replica; INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`,
			`"ev" its rwc_capture_replica trigger is disabled, or not as rwc made it`},
		{"insert only", ``, `DROP TRIGGER rwc_capture ON ev; CREATE TRIGGER rwc_capture AFTER INSERT ON ev FOR EACH STATEMENT EXECUTE FUNCTION rwc.capture();
			ALTER TABLE ev ENABLE ALWAYS TRIGGER rwc_capture; DELETE FROM ev WHERE d = '2026-03-09'`, `"ev" its rwc_capture trigger is disabled, or not as rwc made it`},
		{"function replaced", ``, `CREATE OR REPLACE FUNCTION rwc.capture() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
			INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, `"ev" runs rwc.capture() not as this version of rwc makes it`},
		{"recreated", ``, `CREATE TABLE ev2 AS SELECT * FROM ev WHERE k = 'b'; DROP TABLE ev; ALTER TABLE ev2 RENAME TO ev`, `"ev" has no rwc_capture trigger`},
		{"column retyped", ``, `ALTER TABLE ev ALTER COLUMN v TYPE bigint USING v * 2`, `"ev" its trigger, or the table's definition, changed`},
		{"inheritance child", `CREATE TABLE ev_child () INHERITS (ev)`, `INSERT INTO ev_child VALUES ('2026-03-09', 'c', 1)`, `"ev" has inheritance children`},
		// Written through a parent for a while, which fires no trigger of
		// ev's: INHERIT leaves ev's catalog row alone, not its columns'.
		{"inherited for a while", ``, `CREATE TABLE ev_parent (d date, k text, v integer); ALTER TABLE ev INHERIT ev_parent;
			UPDATE ev_parent SET v = v + 1 WHERE d = '2026-03-09'; ALTER TABLE ev NO INHERIT ev_parent`,
			`"ev" its trigger, or the table's definition, changed since the last refresh`},
		{"attached for a while", ``, `CREATE TABLE ev_parent (d date, k text, v integer) PARTITION BY RANGE (d);
			ALTER TABLE ev_parent ATTACH PARTITION ev FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
			UPDATE ev_parent SET v = v + 1 WHERE d = '2026-03-09'; ALTER TABLE ev_parent DETACH PARTITION ev`,
			`"ev" its trigger, or the table's definition, changed since the last refresh`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			if c.setup != "" {
				e.exec(c.setup)
				f := flow(t, map[string]string{"p.yaml": triggerSpec}, "t")
				refresh(t, e.runner(now0), reqWindow(f))
				e.exec(c.dml)
				recomputed(t, e, f, c.why)
				return
			}
			f := vouched(t, e, triggerSpec)
			e.exec(c.dml)
			recomputed(t, e, f, c.why)
		})
	}
}

// A partition or an inheritance child (written through its parent, which
// fires none of its triggers) and an unlogged
// table (which crash recovery empties, firing none) are probed at every
// refresh, whatever their triggers say. (A view as a source has no row
// versions to fingerprint either: such a flow recomputes its window at
// every refresh. A partitioned source vouches: TestCapturePartitionedSource.)
func TestCaptureTriggersUnloggable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, setup, dml, why string }{
		{"partition", `CREATE TABLE ev_parent (d date, k text, v integer) PARTITION BY RANGE (d);
			ALTER TABLE ev_parent ATTACH PARTITION ev FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')`,
			`INSERT INTO ev_parent VALUES ('2026-03-09', 'c', 1)`, `"ev" is a partition or an inheritance child`},
		{"inheritance child", `CREATE TABLE ev_parent (d date, k text, v integer); ALTER TABLE ev INHERIT ev_parent`,
			`UPDATE ev_parent SET v = v + 1 WHERE d = '2026-03-09'`, `"ev" is a partition or an inheritance child`},
		{"unlogged", `ALTER TABLE ev SET UNLOGGED`, `DELETE FROM ev WHERE d = '2026-03-09'`, `"ev" is unlogged`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(c.setup)
			f := flow(t, map[string]string{"p.yaml": triggerSpec}, "t")
			for range 3 {
				res := refresh(t, e.runner(now0), reqWindow(f))
				if !strings.Contains(res.Capture, c.why) || strings.Contains(res.Capture, "no probe") {
					t.Fatalf("%s %v: capture %q, want a probe because %s", res.Action, res.Reasons, res.Capture, c.why)
				}
			}
			e.exec(c.dml)
			recomputed(t, e, f, c.why)
		})
	}
}

// The log keeps only what a stored snapshot has not seen: after a refresh
// that saw everything, and the one after it (the first refresh's own
// write on the target is seen by the second), it is empty.
func TestCaptureTriggersLogCollected(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-10', 'c', 1)`)
	if n := e.count(`SELECT (SELECT count(*) FROM rwc.change_log) + (SELECT count(*) FROM rwc.change_values)`); n < 2 {
		t.Fatalf("%d rows logged for two writes", n)
	}
	refresh(t, e.runner(now0), reqWindow(f))
	refresh(t, e.runner(now0), reqWindow(f))
	if n := e.count(`SELECT (SELECT count(*) FROM rwc.change_log) + (SELECT count(*) FROM rwc.change_values)`); n != 0 {
		t.Errorf("%d rows left in rwc.change_log and rwc.change_values, want none", n)
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || !strings.Contains(res.Capture, "no probe") {
		t.Errorf("after collecting: %s, capture %q", res.Action, res.Capture)
	}
}

// A subscription's apply worker fires no statement trigger, only row
// triggers enabled for replicas: what it writes is logged all the same.
// Here the subscription comes and goes between two refreshes (copy_data
// off: the initial copy would fire the statement trigger), so that no
// catalog the refresh reads says it was there.
func TestCaptureTriggersSubscribed(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	pub, pubDSN := pgtest.DB(t)
	pgtest.Exec(t, pub, `CREATE TABLE ev (d date, k text, v integer); CREATE PUBLICATION p FOR TABLE ev`)
	slot := e.value(`SELECT current_database()`)
	pgtest.Exec(t, pub, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slot)
	t.Cleanup(func() {
		pub.Exec(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, slot)
	})
	e.exec(fmt.Sprintf(`CREATE SUBSCRIPTION %s CONNECTION %s PUBLICATION p WITH (create_slot = false, slot_name = %[1]s, copy_data = false)`,
		slot, pq.QuoteLiteral(pubDSN)))
	t.Cleanup(func() {
		for _, q := range []string{"ALTER SUBSCRIPTION %s DISABLE", "ALTER SUBSCRIPTION %s SET (slot_name = NONE)", "DROP SUBSCRIPTION %s"} {
			e.db.Exec(fmt.Sprintf(q, slot))
		}
	})
	pgtest.Exec(t, pub, `INSERT INTO ev VALUES ('2026-03-09', 'sub', 7)`)
	for deadline := time.Now().Add(30 * time.Second); e.count(`SELECT count(*) FROM ev WHERE k = 'sub'`) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscription applied nothing in 30s")
		}
	}
	e.exec(`DROP SUBSCRIPTION ` + slot)
	recomputed(t, e, f, `"ev" changed`)
}

// rwc plan and rwc refresh --explain find nothing changed where the
// triggers vouch for it, as the refresh does.
func TestCaptureTriggersFindChanges(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	window, err := f.Predicate.Resolve(predicate.Resolution{Now: now0})
	if err != nil {
		t.Fatal(err)
	}
	found, err := run.FindChanges(context.Background(), e.db, f, window, 0)
	if err != nil {
		t.Fatal(err)
	}
	if found.Forced != "" || len(found.Changed) != 0 || found.Target != compile.TargetClean {
		t.Errorf("FindChanges with nothing changed: %+v, want nothing changed, the target clean", found)
	}
}

// A flow dropped (rwc apply --drop-removed) leaves nothing in what the
// log is collected by: another flow reading the same source still clears
// it.
func TestCaptureTriggersDroppedFlow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	other := secondFlow(t, e)
	if err := e.runner(now0).DropRemoved(context.Background(), run.Removed{Flow: f.Name(), Target: f.Target()}); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	for range 2 {
		refresh(t, e.runner(now0), reqWindow(other))
	}
	if n := e.count(`SELECT count(*) FROM rwc.change_log`); n != 0 {
		t.Errorf("%d rows left in rwc.change_log after the dropped flow's, want none", n)
	}
}

// rwc.capture() is rwc's only with rwc's search_path: with another, a
// function planted on it could log every write under a transaction that
// every snapshot has seen.
func TestCaptureTriggersFunctionSearchPath(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(`ALTER FUNCTION rwc.capture() SET search_path = public, pg_catalog;
		CREATE FUNCTION public.pg_current_xact_id() RETURNS xid8 LANGUAGE sql AS $$ SELECT '3'::xid8 $$`)
	// Probed, and rwc.capture() made rwc's again.
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, `"ev" runs rwc.capture() not as this version of rwc makes it`) {
		t.Errorf("after search_path changed: capture %q", res.Capture)
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	recomputed(t, e, f, `"ev" not vouched for yet`)
}

// A source the query names twice, qualified and not, is one table: its
// triggers vouch for it once.
func TestCaptureTriggersSourceNamedTwice(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := strings.Replace(triggerSpec, "SELECT d, k, v FROM ev", "SELECT a.d, a.k, a.v FROM ev a WHERE EXISTS (SELECT 1 FROM public.ev b WHERE b.k = a.k)", 1)
	f := vouched(t, e, spec)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	recomputed(t, e, f, `"ev" changed`)
}

// A flow that captures by fingerprints for a while and by triggers again
// stores nothing its triggers vouch for meanwhile: what was written then
// is found.
func TestCaptureTriggersSpecFlips(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	byPrints := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	for _, dml := range []string{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, ``} {
		if dml != "" {
			e.exec(dml)
		}
		refresh(t, e.runner(now0), reqWindow(byPrints))
	}
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`)
	recomputed(t, e, f, `"ev" not vouched for yet`)
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`DELETE FROM ev WHERE d = '2026-03-08'`)
	recomputed(t, e, f, `"ev" changed`)
}

// Another flow's refreshes, which clear the log of what every stored
// snapshot saw, leave what one flow's has not: it finds the change. While
// a refresh capturing by triggers runs (it holds the lock shared), none is
// cleared.
func TestCaptureTriggersLogShared(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	other := secondFlow(t, e)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	for range 2 {
		refresh(t, e.runner(now0), reqWindow(other))
	}
	recomputed(t, e, f, `"ev" changed`)

	conn, err := e.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_lock_shared(hashtextextended('rwc.change_log', 0))`); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-10', 'c', 1)`)
	for range 2 {
		refresh(t, e.runner(now0), reqWindow(f))
		refresh(t, e.runner(now0), reqWindow(other))
	}
	if n := e.count(`SELECT count(*) FROM rwc.change_log`); n == 0 {
		t.Error("the log was cleared while a refresh capturing by triggers held the lock")
	}
}

// secondFlow is u, the daily flow's copy reading the same source, its
// triggers vouching (refreshed twice).
func secondFlow(t *testing.T, e *env) *flowT {
	t.Helper()
	u := flow(t, map[string]string{"p.yaml": strings.Replace(triggerSpec, "  t:\n", "  u:\n", 1)}, "u")
	for range 2 {
		refresh(t, e.runner(now0), reqWindow(u))
	}
	return u
}

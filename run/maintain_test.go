package run_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// immediateSpec joins ev to a dimension, kept by rwc's triggers between
// refreshes.
const immediateSpec = `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      v: integer
      name: text
    maintain: immediate
    query: |
      SELECT e.d, e.k, e.v, m.name FROM ev e JOIN dim m ON m.k = e.k
`

// windowDiff is what differs between the target's window and the query's
// (rows the one has more of than the other), and the target's rows before
// the window, which no write may touch.
func (e *env) windowDiff() []string {
	e.t.Helper()
	q := `SELECT e.d, e.k, e.v, m.name FROM ev e JOIN dim m ON m.k = e.k WHERE e.d >= '2026-03-08'`
	return e.rows(`(SELECT d, k, v, name FROM public.t WHERE d >= '2026-03-08' EXCEPT ALL ` + q + `)
		UNION ALL (` + q + ` EXCEPT ALL SELECT d, k, v, name FROM public.t WHERE d >= '2026-03-08')`)
}

func newImmediateEnv(t *testing.T) (*env, *flowT) {
	t.Helper()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE dim (k text, name text); INSERT INTO dim VALUES ('a', 'A'), ('b', 'B'), ('c', 'C')`)
	f := flow(t, map[string]string{"p.yaml": immediateSpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	return e, f
}

// Every kind of write to either source leaves the window equal to the
// query inside the writer's transaction, with no refresh, and history
// before the window as it was; a write rolled back leaves nothing.
func TestMaintainImmediate(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	if n := e.count(`SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'rwc\_maintain\_%'`); n != 10 {
		t.Fatalf("%d maintenance triggers, want 5 on each of ev and dim", n)
	}
	before := e.rows(`SELECT d, k, v, name FROM public.t WHERE d < '2026-03-08' ORDER BY 1, 2, 3`)
	for _, dml := range []string{
		`INSERT INTO ev VALUES ('2026-03-09', 'c', 1), ('2026-03-01', 'a', 7), ('2026-03-11', 'z', 2)`,
		`INSERT INTO ev SELECT d, 'b', 5 FROM ev WHERE k = 'a'`,
		`UPDATE ev SET v = v + 1 WHERE d = '2026-03-10'`,
		`UPDATE ev SET d = '2026-03-02' WHERE d = '2026-03-09' AND k = 'c'`,
		`DELETE FROM ev WHERE d = '2026-03-08' AND k = 'a'`,
		`UPDATE dim SET name = 'B2' WHERE k = 'b'`,
		`INSERT INTO dim VALUES ('z', 'Z')`,
		// One statement that maintains the flow twice: an upsert's update
		// and insert, a MERGE's, two sources written by one query. The
		// second must not add what the first already recomputed or
		// inserted.
		`INSERT INTO ev VALUES ('2026-03-10', 'y', 1); CREATE UNIQUE INDEX dim_k ON dim (k)`,
		`INSERT INTO dim VALUES ('b', 'B5'), ('y', 'Y') ON CONFLICT (k) DO UPDATE SET name = excluded.name`,
		`MERGE INTO ev USING (VALUES (DATE '2026-03-10', 'a', 5), (DATE '2026-03-10', 'z', 6)) s(d, k, v) ON ev.d = s.d AND ev.k = s.k
			WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.d, s.k, s.v)`,
		`WITH x AS (INSERT INTO dim VALUES ('w', 'W')) INSERT INTO ev VALUES ('2026-03-10', 'w', 4)`,
		`INSERT INTO ev VALUES ('2026-03-09', 'w', 8); INSERT INTO dim VALUES ('x', 'X'); INSERT INTO ev VALUES ('2026-03-09', 'x', 9)`,
		`DROP INDEX dim_k`,
		`DELETE FROM dim WHERE k = 'c'`,
		`BEGIN; INSERT INTO ev VALUES ('2026-03-10', 'a', 99); ROLLBACK`,
		`COPY ev FROM PROGRAM 'echo 2026-03-10,a,3' WITH (FORMAT csv)`,
		`MERGE INTO ev USING (VALUES (DATE '2026-03-09', 'a')) s(d, k) ON ev.d = s.d AND ev.k = s.k WHEN MATCHED THEN UPDATE SET v = 0`,
		`TRUNCATE dim; INSERT INTO dim VALUES ('a', 'A3'), ('b', 'B3')`,
		`TRUNCATE ev`,
	} {
		e.exec(dml)
		if diff := e.windowDiff(); len(diff) > 0 {
			t.Fatalf("after %s the target's window differs from the query: %v", dml, diff)
		}
	}
	if after := e.rows(`SELECT d, k, v, name FROM public.t WHERE d < '2026-03-08' ORDER BY 1, 2, 3`); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("history before the window changed:\n%v\nwas\n%v", after, before)
	}
	// The next refresh finds the target as a recompute leaves it.
	refresh(t, e.runner(now0), reqWindow(f))
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Fatalf("after a refresh: %v", diff)
	}
}

// An insert into the fact is carried by the query over its new rows
// alone: the target's other rows keep their row versions.
func TestMaintainImmediateDelta(t *testing.T) {
	t.Parallel()
	e, _ := newImmediateEnv(t)
	kept := e.rows(`SELECT ctid FROM public.t ORDER BY ctid`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'a', 1)`)
	now := e.rows(`SELECT ctid FROM public.t ORDER BY ctid`)
	if len(now) != len(kept)+1 || fmt.Sprint(now[:len(kept)]) != fmt.Sprint(kept) {
		t.Errorf("an insert rewrote rows of the target: %d rows before, %d after", len(kept), len(now))
	}
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Fatal(diff)
	}
}

// Writers on both sources at once, in READ COMMITTED and REPEATABLE READ
// (retrying the serialization failures maintenance gives the latter), and
// refreshes among them: the window ends equal to the query.
func TestMaintainImmediateConcurrent(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	dml := []string{
		`INSERT INTO ev VALUES ('2026-03-%02d', '%c', %d)`,
		`UPDATE ev SET v = v + 1 WHERE d = '2026-03-%02d' AND k = '%c' AND %d > 0`,
		`DELETE FROM ev WHERE d = '2026-03-%02d' AND k = '%c' AND v %% 3 = %d %% 3`,
		`UPDATE dim SET name = name || '%[1]d' WHERE k = '%[2]c' AND %[3]d > 0`,
		`INSERT INTO dim VALUES ('%[2]c', 'n%[1]d%[3]d')`,
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			iso := sql.LevelReadCommitted
			if w%2 == 1 {
				iso = sql.LevelRepeatableRead
			}
			for range 25 {
				stmts := []string{}
				for range 1 + rng.Intn(3) {
					stmts = append(stmts, fmt.Sprintf(dml[rng.Intn(len(dml))], 6+rng.Intn(5), 'a'+rune(rng.Intn(4)), rng.Intn(9)))
				}
				if err := writeRetrying(ctx, e.db, iso, stmts); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			if res := e.runner(now0).Refresh(ctx, reqWindow(f)); res.Err != nil {
				errs <- res.Err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Fatalf("after concurrent writers the target's window differs from the query: %v", diff)
	}
}

// writeRetrying runs stmts in one transaction, again when it fails with a
// serialization failure or a deadlock, as an application would.
func writeRetrying(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, stmts []string) error {
	for {
		err := writeOnce(ctx, db, iso, stmts)
		var pe *pq.Error
		if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
			continue
		}
		return err
	}
}

func writeOnce(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, stmts []string) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// A flow switched back to maintain: apply (or removed) loses its triggers
// at the next apply, before anything is refreshed.
func TestMaintainImmediateDropped(t *testing.T) {
	t.Parallel()
	e, _ := newImmediateEnv(t)
	p := project(t, map[string]string{"p.yaml": strings.Replace(immediateSpec, "    maintain: immediate\n", "", 1)})
	if _, err := e.runner(now0).Apply(context.Background(), p, run.Deployment{By: "test"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'rwc\_maintain\_%'`); n != 0 {
		t.Errorf("%d maintenance triggers left", n)
	}
	if n := e.count(`SELECT count(*) FROM pg_proc WHERE proname LIKE 'maintain\_%'`); n != 0 {
		t.Errorf("%d maintenance functions left", n)
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'a', 1)`)
	if diff := e.windowDiff(); len(diff) != 1 {
		t.Errorf("the target followed a write with maintain: apply: %v", diff)
	}
}

// A refresh after maintenance recomputes the partitions the triggers
// wrote, not the whole window: those whose sources changed, those a write
// that changed nothing rewrote (an update to the same values), and those
// anyone else changed, which the triggers' writes hide (recomputed, each
// is as the query has it).
func TestMaintainImmediateReconciles(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	for _, c := range []struct{ dml, want string }{
		{`INSERT INTO ev VALUES ('2026-03-09', 'a', 1)`, "[2026-03-09]"},
		{`UPDATE ev SET v = v WHERE d = '2026-03-09'`, "[2026-03-09]"},
		{`UPDATE public.t SET v = -1 WHERE d = '2026-03-10'`, "[2026-03-10]"},
		{`UPDATE ev SET v = v WHERE d = '2026-03-08'; DELETE FROM public.t WHERE d = '2026-03-10'`, "[2026-03-08 2026-03-10]"},
	} {
		e.exec(c.dml)
		res := refresh(t, e.runner(now0), reqWindow(f))
		checkOutcome(t, res, compile.ActionIncremental)
		if fmt.Sprint(res.Partitions) != c.want {
			t.Errorf("after %s: partitions %v, want %s", c.dml, res.Partitions, c.want)
		}
		if diff := e.windowDiff(); len(diff) > 0 {
			t.Fatalf("after %s: %v (%+v)", c.dml, diff, res)
		}
	}
}

// The functions a plan shows (from the plan's observation, read-only) are
// those the refresh installed: the same body, made by the same statement.
func TestMaintainPlanIsApply(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	obs, err := run.Observe(context.Background(), e.db, f, 0)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := f.Predicate.Resolve(predicate.Resolution{Now: now0})
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := f.Statements(resolved, false, obs)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := f.Maintenance(resolved, stmts, obs.Settings)
	if err != nil || len(ms) != 2 {
		t.Fatalf("%d maintenances, %v", len(ms), err)
	}
	for _, m := range ms {
		if got := e.value(`SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure($1)`, m.Function+"()"); got != m.Body {
			t.Errorf("%s: installed body\n%s\nplanned\n%s", m.Function, got, m.Body)
		}
		comment := "COMMENT ON FUNCTION " + m.Function + "() IS " + pq.QuoteLiteral(m.Stamp)
		if got := e.value(`SELECT obj_description(to_regprocedure($1), 'pg_proc')`, m.Function+"()"); got != m.Stamp || !slices.Contains(m.SQL, comment) {
			t.Errorf("%s was not made by the statements the plan shows: %s", m.Function, got)
		}
		// Only rwc's triggers may call it: anyone's would write their rows.
		if e.value(`SELECT has_function_privilege('public', to_regprocedure($1), 'EXECUTE')`, m.Function+"()") != "false" {
			t.Errorf("%s: PUBLIC may execute it", m.Function)
		}
	}
}

// rwc status reads each source's maintenance as it stands: a trigger
// disabled by hand shows.
func TestMaintenanceHealth(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	e.exec(`ALTER TABLE dim DISABLE TRIGGER ` + pq.QuoteIdentifier(compile.MaintainTrigger("t", "update")))
	got, err := run.MaintenanceHealth(context.Background(), e.db, f)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", got) != `[{Source:"ev" Function:rwc."maintain_e3b98a4da31a_0" Installed:true Triggers:5} {Source:"dim" Function:rwc."maintain_e3b98a4da31a_1" Installed:true Triggers:4}]` {
		t.Errorf("health %+v", got)
	}
}

// maintain: immediate with capture: triggers: an apply with nothing
// written since is not probed at all; after a maintained write, the
// target's log names the maintenance's writes, which the refresh counts as
// its own partitions' upkeep (the sources' logs name the same days), so it
// recomputes those days only and leaves the window equal to the query.
func TestMaintainImmediateCapturedByTriggers(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE dim (k text, name text); INSERT INTO dim VALUES ('a', 'A'), ('b', 'B'), ('c', 'C')`)
	spec := strings.Replace(immediateSpec, "    maintain: immediate\n", "    maintain: immediate\n    capture: triggers\n", 1)
	f := vouched(t, e, spec)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Fatalf("after the insert: %v", diff)
	}
	res := refresh(t, e.runner(now0), reqWindow(f))
	if res.Action != compile.ActionIncremental || fmt.Sprint(res.Partitions) != "[2026-03-09]" {
		t.Fatalf("after a maintained insert: %s %v %v, capture %q; want incremental on 2026-03-09", res.Action, res.Reasons, res.Partitions, res.Capture)
	}
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Fatalf("after the refresh: %v", diff)
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") || len(res.Partitions) != 0 {
		t.Errorf("nothing written since: %s %v, capture %q; want nothing changed, unprobed", res.Action, res.Partitions, res.Capture)
	}
}

// rwc refresh --explain (and rwc plan) show what apply writes for a flow
// with maintain: immediate, which decides with its target's probe: after a
// whole window's rewrite, a maintained update it cannot place in the
// target is one write of the window, not the changed day and then the
// window on top.
func TestMaintainExplainIsApply(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	ex, err := run.Explain(context.Background(), e.db, reqWindow(f), run.Options{Now: func() time.Time { return now0 }})
	if err != nil {
		t.Fatal(err)
	}
	res := refresh(t, e.runner(now0), reqWindow(f))
	if len(ex.Writes) != 1 || ex.Decision.Action != res.Action || fmt.Sprint(ex.Decision.Reasons) != fmt.Sprint(res.Reasons) {
		t.Errorf("explain: %s %v, %d writes; apply: %s %v, one write", ex.Decision.Action, ex.Decision.Reasons, len(ex.Writes), res.Action, res.Reasons)
	}
}

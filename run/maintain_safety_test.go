package run_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
)

// Refreshes that each resolve a new day (so replace the functions) while
// writers on both sources run without pause: every refresh succeeds (it
// replaces the functions without locking the sources, which the waiting
// writers hold), the writers see at most serialization failures, which
// they retry, and the window ends equal to the query.
func TestMaintainImmediateNewDayUnderLoad(t *testing.T) {
	t.Parallel()
	e, f := newImmediateEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := map[string]int{}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				q := fmt.Sprintf(`INSERT INTO ev VALUES ('2026-03-%02d', 'a', %d)`, 10+i%5, i)
				if w%2 == 1 {
					q = fmt.Sprintf(`UPDATE dim SET name = 'n%d' WHERE k = 'b'`, i)
				}
				var pe *pq.Error
				if _, err := e.db.ExecContext(ctx, q); errors.As(err, &pe) && pe.Code != "40001" && pe.Code != "57014" {
					mu.Lock()
					failures["writer: "+pe.Message]++
					mu.Unlock()
				}
			}
		}()
	}
	for day := 1; day <= 4; day++ {
		if res := e.runner(now0.AddDate(0, 0, day)).Refresh(context.Background(), reqWindow(f)); res.Err != nil {
			failures["refresh: "+res.Err.Error()]++
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("failures: %v", failures)
	}
	refresh(t, e.runner(now0.AddDate(0, 0, 4)), reqWindow(f))
	q := `SELECT e.d, e.k, e.v, m.name FROM ev e JOIN dim m ON m.k = e.k WHERE e.d >= '2026-03-12'`
	if diff := e.rows(`(SELECT d, k, v, name FROM public.t WHERE d >= '2026-03-12' EXCEPT ALL ` + q + `)
		UNION ALL (` + q + ` EXCEPT ALL SELECT d, k, v, name FROM public.t WHERE d >= '2026-03-12')`); len(diff) > 0 {
		t.Errorf("the window differs from the query: %v", diff)
	}
}

// A writer that waited for the flow's lock while a refresh replaced the
// maintenance (its stamp, here changed by hand as that refresh would)
// does not go on with the body it started: its statement fails with a
// serialization failure saying to retry, and writes nothing.
func TestMaintainImmediateStaleBody(t *testing.T) {
	t.Parallel()
	e, _ := newImmediateEnv(t)
	ctx := context.Background()
	holder, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	key := compile.FlowLockNamespace + "t"
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, key); err != nil {
		t.Fatal(err)
	}
	before := e.rows(`SELECT * FROM public.t`)
	done := blockedWriter(e, `UPDATE dim SET name = 'stale' WHERE k = 'a'`)
	fn := compile.MaintainFunction("t", 1) // dim's
	if _, err := holder.ExecContext(ctx, `COMMENT ON FUNCTION `+fn+`() IS 'rwc maintenance of a later refresh'`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); err != nil {
		t.Fatal(err)
	}
	var pe *pq.Error
	if err := <-done; !errors.As(err, &pe) || pe.Code != "40001" || !strings.Contains(pe.Message, "retry the transaction") {
		t.Fatalf("the writer that waited got %v, want a serialization failure saying to retry", err)
	}
	if after := e.rows(`SELECT * FROM public.t`); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the stale maintenance wrote the target")
	}
}

// A role that may use schema rwc cannot have its own trigger call a
// maintenance function, which would write its rows into the target with
// rwc's rights: PUBLIC may not execute them. The sources' writers are
// maintained all the same.
func TestMaintainImmediatePlantedTrigger(t *testing.T) {
	t.Parallel()
	e, _ := newImmediateEnv(t)
	e.exec(`CREATE ROLE intruder; GRANT USAGE ON SCHEMA rwc TO intruder; GRANT INSERT ON ev TO intruder`)
	ctx := context.Background()
	c, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ExecContext(ctx, `SET ROLE intruder; CREATE TEMP TABLE x (d date, k text, v int);
		CREATE TRIGGER z AFTER INSERT ON x REFERENCING NEW TABLE AS rwc_new FOR EACH STATEMENT EXECUTE FUNCTION `+compile.MaintainFunction("t", 0)+`()`)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("planting a trigger on the function: %v, want permission denied", err)
	}
	if _, err := c.ExecContext(ctx, `RESET ROLE; SET ROLE intruder; INSERT INTO ev VALUES ('2026-03-09', 'a', 5)`); err != nil {
		t.Fatalf("a writer that may only insert: %v", err)
	}
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Errorf("the writer's insert was not maintained: %v", diff)
	}
}

// A source column named as one of the function's variables (FOUND, TG_OP,
// rwc_statement) is read as the column.
func TestMaintainImmediateColumnNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE ev3 (d date, found int, tg_op text, rwc_statement text);
		INSERT INTO ev3 VALUES ('2026-03-09', 1, 'x', 'y')`)
	f := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      found: integer
      tg_op: text
      rwc_statement: text
    maintain: immediate
    query: |
      SELECT d, found, tg_op, rwc_statement FROM ev3
`}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`INSERT INTO ev3 VALUES ('2026-03-10', 2, 'i', 'j'); UPDATE ev3 SET found = 3 WHERE d = '2026-03-09'`)
	if diff := e.rows(`(SELECT * FROM public.t EXCEPT ALL SELECT * FROM ev3) UNION ALL (SELECT * FROM ev3 EXCEPT ALL SELECT * FROM public.t)`); len(diff) > 0 {
		t.Errorf("the window differs from the query: %v", diff)
	}
}

// The flow's lock is taken before a statement locks any row: a writer
// whose one statement wants a row that a longer transaction (which
// already wrote a source) goes on to update waits for it, where taking
// the lock after its rows would deadlock the two.
func TestMaintainImmediateNoRowDeadlock(t *testing.T) {
	t.Parallel()
	e, _ := newImmediateEnv(t)
	ctx := context.Background()
	long, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Rollback()
	if _, err := long.ExecContext(ctx, `INSERT INTO ev VALUES ('2026-03-09', 'a', 1)`); err != nil {
		t.Fatal(err)
	}
	done := blockedWriter(e, `UPDATE dim SET name = 'A1' WHERE k = 'a'`)
	if _, err := long.ExecContext(ctx, `UPDATE dim SET name = 'A2' WHERE k = 'a'`); err != nil {
		t.Fatalf("the longer transaction: %v", err)
	}
	if err := long.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the one-statement writer: %v", err)
	}
	if diff := e.windowDiff(); len(diff) > 0 {
		t.Errorf("the window differs from the query: %v", diff)
	}
}

// A source with inheritance children is refused, changing nothing: the
// query reads the children's rows, whose writes fire none of its triggers.
func TestMaintainImmediateInheritanceRefused(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE dim (k text, name text); INSERT INTO dim VALUES ('a', 'A'); CREATE TABLE ev_child () INHERITS (ev)`)
	f := flow(t, map[string]string{"p.yaml": immediateSpec}, "t")
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "has inheritance children") || !strings.Contains(res.Err.Error(), "nothing was changed") {
		t.Fatalf("refresh: %v, want a refusal naming the inheritance children", res.Err)
	}
	if n := e.count(`SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'rwc\_maintain\_%'`); n != 0 || e.value(`SELECT to_regclass('public.t') IS NULL`) != "true" {
		t.Errorf("the refused refresh left %d triggers, or the target", n)
	}
}

// blockedWriter runs stmt on a connection of its own and returns once it
// waits for an advisory lock (the flow's); its outcome comes on the
// channel.
func blockedWriter(e *env, stmt string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.db.ExecContext(context.Background(), stmt)
		done <- err
	}()
	for e.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	return done
}

// A writer's own settings do not change what the maintenance computes:
// the function runs with the refresh's (here to_tsvector's text search
// configuration, which the writer changed).
func TestMaintainImmediateWriterSettings(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      ts: text
    maintain: immediate
    query: |
      SELECT d, k, to_tsvector(k || ' running')::text AS ts FROM ev
`}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`SET default_text_search_config = 'simple'; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); RESET default_text_search_config`)
	if diff := e.rows(`(SELECT d, k, ts FROM public.t EXCEPT ALL SELECT d, k, to_tsvector(k || ' running')::text FROM ev WHERE d >= '2026-03-08')
		UNION ALL (SELECT d, k, to_tsvector(k || ' running')::text FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, ts FROM public.t)`); len(diff) > 0 {
		t.Errorf("the writer's setting reached the target: %v", diff)
	}
}

// A query naming its columns with the table's schema (public.ev.d) is
// maintained by recomputing the days an insert touched: its delta would
// name a transition table, which has no schema.
func TestMaintainImmediateSchemaQualifiedColumns(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": strings.Replace(strings.Replace(dailySpec, "SELECT d, k, v FROM ev", "SELECT public.ev.d, public.ev.k, public.ev.v FROM public.ev", 1),
		"    query: |", "    maintain: immediate\n    query: |", 1)}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`)
	if diff := e.rows(`(SELECT * FROM public.t EXCEPT ALL SELECT * FROM ev WHERE d >= '2026-03-08') UNION ALL (SELECT * FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT * FROM public.t)`); len(diff) > 0 {
		t.Errorf("the window differs from the query: %v", diff)
	}
}

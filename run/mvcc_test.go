package run_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// Readers of a target during rwc refresh --full and during a column change
// (issue #13): they never wait for the recompute, and never read an empty
// or a partial table.
//
// A refresh is held in the middle of its INSERT by a gate, not by a sleep:
// the flow's query calls gate(), which waits for an advisory lock the test
// holds. "The reader completed while the refresh was still at the gate",
// observed in pg_locks, is a state, not a timing.

// gateKey is the advisory lock gate() waits for.
const gateKey = 42

// gateFunction makes gate(x), which returns x once the test's advisory lock
// is free (per row: the first call waits).
const gateFunction = `CREATE FUNCTION gate(x anyelement) RETURNS anyelement LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM pg_advisory_lock_shared(42); PERFORM pg_advisory_unlock_shared(42); RETURN x; END $$`

// gatedSpec is dailySpec with more columns and a query of its own.
func gatedSpec(columns, query string) map[string]string {
	return map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
` + columns + `    query: |
      ` + query + `
`}
}

const dailyColumns = "      d: date\n      k: text\n      v: integer\n"

// targetText is the target's rows, all their columns, as one sorted string,
// read in one statement (so on any connection, in any transaction).
const targetText = `SELECT coalesce(string_agg(t::text, ' ' ORDER BY t::text), '') FROM t`

// gate is a refresh running in the background, held at the gate.
type gate struct {
	e    *env
	conn *sql.Conn // holds the gate's lock
	done chan run.Result
}

// startGated runs refresh in the background and returns once its query
// waits at the gate.
func (e *env) startGated(refresh func() run.Result) *gate {
	e.t.Helper()
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, gateKey); err != nil {
		e.t.Fatal(err)
	}
	g := &gate{e: e, conn: conn, done: make(chan run.Result, 1)}
	go func() { g.done <- refresh() }()
	for !g.waiting() {
		select {
		case res := <-g.done:
			e.t.Fatalf("the refresh ended before it reached the gate: %v", res.Err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return g
}

// waiting reports whether the refresh waits at the gate.
func (g *gate) waiting() bool {
	g.e.t.Helper()
	return g.e.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, gateKey) > 0
}

// open lets the refresh go on and returns its result.
func (g *gate) open() run.Result {
	g.e.t.Helper()
	if _, err := g.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, gateKey); err != nil {
		g.e.t.Fatal(err)
	}
	g.conn.Close()
	return <-g.done
}

// read runs q (one value) on a new connection while the refresh is held at
// the gate. The read must complete with the refresh still there: should
// the reader wait for a lock instead, the test fails, saying which lock.
func (g *gate) read(q string) string {
	g.e.t.Helper()
	ctx := context.Background()
	conn, err := g.e.db.Conn(ctx)
	if err != nil {
		g.e.t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		g.e.t.Fatal(err)
	}
	type answer struct {
		v   string
		err error
	}
	got := make(chan answer, 1)
	go func() {
		defer conn.Close()
		var a answer
		a.err = conn.QueryRowContext(ctx, q).Scan(&a.v)
		got <- a
	}()
	for {
		select {
		case a := <-got:
			if a.err != nil {
				g.e.t.Fatalf("reader: %v", a.err)
			}
			if !g.waiting() {
				g.e.t.Fatalf("the reader completed, but the refresh was no longer at the gate")
			}
			return a.v
		case <-time.After(10 * time.Millisecond):
		}
		if lock := g.e.value(`SELECT coalesce(string_agg(mode || ' on ' || coalesce(relation::regclass::text, locktype), ', '), '') FROM pg_locks
			WHERE pid = $1 AND NOT granted`, pid); lock != "" {
			g.e.t.Errorf("the reader waits for %s while the refresh recomputes", lock)
			return ""
		}
	}
}

// A REPEATABLE READ reader whose snapshot predates a full refresh's commit
// reads the old rows after it, not an empty table (a TRUNCATE gives it an
// empty table); a reader that starts during the recompute reads the old
// rows without waiting (a TRUNCATE makes it wait for the whole recompute).
func TestFullRefreshKeepsReadersOnTheOldRows(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(gateFunction)
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
	e.exec(`INSERT INTO t VALUES ('2026-03-01', 'dml', 1)`) // outside the window: a full refresh loses it
	before := e.value(targetText)
	e.exec(`UPDATE ev SET v = v + 100`)

	ctx := context.Background()
	old, err := e.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Rollback()
	if _, err := old.ExecContext(ctx, `SELECT count(*) FROM ev`); err != nil { // takes the snapshot, no lock on t
		t.Fatal(err)
	}

	f := flow(t, gatedSpec(dailyColumns, "SELECT d, k, gate(v) AS v FROM ev"), "t")
	g := e.startGated(func() run.Result { return r.Refresh(ctx, run.Request{Flow: f, Mode: run.Full}) })
	during := g.read(targetText)
	res := g.open()
	if res.Err != nil {
		t.Fatalf("full refresh: %v", res.Err)
	}
	if during != before {
		t.Errorf("a reader during the recompute read\n%s\nwant the old rows\n%s", during, before)
	}
	checkOutcome(t, res, compile.ActionFullRefresh, compile.ReasonFullRefreshRequested)
	if res.RowsOutside != 1 || res.RowsDeleted != 7 || res.RowsInserted != 6 {
		t.Errorf("outside %d, deleted %d, inserted %d; want 1, 7, 6", res.RowsOutside, res.RowsDeleted, res.RowsInserted)
	}

	var snap string
	if err := old.QueryRowContext(ctx, targetText).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if snap != before {
		t.Errorf("a snapshot older than the full refresh reads\n%q\nwant the old rows\n%s", snap, before)
	}
	if after := e.value(targetText); after != "(2026-03-08,a,108) (2026-03-08,b,180) (2026-03-09,a,109) (2026-03-09,b,190) (2026-03-10,a,110) (2026-03-10,b,200)" {
		t.Errorf("after the full refresh: %s", after)
	}
}

// A column change commits on its own before the recompute: a reader that
// starts during the recompute reads the old rows, under the new columns,
// without waiting (an ALTER TABLE in the refresh's transaction holds
// ACCESS EXCLUSIVE through the whole recompute), and the refresh then
// fills the window as before.
func TestColumnChangeKeepsReadersOnTheOldRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, columns, query string
		during, after        string // the target's rows while the refresh is held, and after
	}{{
		name:    "add",
		columns: dailyColumns + "      w: integer\n",
		query:   "SELECT d, k, v, gate(v) * 2 AS w FROM ev",
		during:  "(2026-03-08,a,8,) (2026-03-08,b,80,) (2026-03-09,a,9,) (2026-03-09,b,90,) (2026-03-10,a,10,) (2026-03-10,b,100,)",
		after:   "(2026-03-08,a,8,16) (2026-03-08,b,80,160) (2026-03-09,a,9,18) (2026-03-09,b,90,180) (2026-03-10,a,10,20) (2026-03-10,b,100,200)",
	}, {
		name:    "drop",
		columns: "      d: date\n      k: text\n",
		query:   "SELECT d, gate(k) AS k FROM ev",
		during:  "(2026-03-08,a) (2026-03-08,b) (2026-03-09,a) (2026-03-09,b) (2026-03-10,a) (2026-03-10,b)",
		after:   "(2026-03-08,a) (2026-03-08,b) (2026-03-09,a) (2026-03-09,b) (2026-03-10,a) (2026-03-10,b)",
	}, {
		name:    "retype",
		columns: "      d: date\n      k: text\n      v: bigint\n",
		query:   "SELECT d, k, gate(v)::bigint + 1 AS v FROM ev",
		during:  "(2026-03-08,a,8) (2026-03-08,b,80) (2026-03-09,a,9) (2026-03-09,b,90) (2026-03-10,a,10) (2026-03-10,b,100)",
		after:   "(2026-03-08,a,9) (2026-03-08,b,81) (2026-03-09,a,10) (2026-03-09,b,91) (2026-03-10,a,11) (2026-03-10,b,101)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(gateFunction)
			refresh(t, e.runner(now0), reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
			r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 10 * time.Second, AllowDestructive: true})
			f := flow(t, gatedSpec(tc.columns, tc.query), "t")
			g := e.startGated(func() run.Result { return r.Refresh(context.Background(), reqWindow(f)) })
			during := g.read(targetText)
			res := g.open()
			if res.Err != nil {
				t.Fatalf("refresh: %v", res.Err)
			}
			if during != tc.during {
				t.Errorf("a reader during the recompute read\n%s\nwant\n%s", during, tc.during)
			}
			checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonQueryChanged)
			if after := e.value(targetText); after != tc.after {
				t.Errorf("after the refresh:\n%s\nwant\n%s", after, tc.after)
			}
		})
	}
}

// A refresh that fails after its column change committed says so, and
// leaves the target's rows as before under the new column; the next plain
// refresh of the same spec, with nothing left to alter, still recomputes
// the window (the state's query fingerprint was cleared with the change).
func TestRefreshFailingAfterColumnChange(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
	e.exec(`INSERT INTO t VALUES ('2026-03-01', 'dml', 1)`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'zero', 0)`) // 100 / v fails on it
	f := flow(t, gatedSpec(dailyColumns+"      w: integer\n", "SELECT d, k, v, 100 / v AS w FROM ev"), "t")

	res := r.Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "column changes (column_added:w), committed before it, stay") {
		t.Fatalf("refresh: %v; want an error saying the column change stays", res.Err)
	}
	if got := e.value(targetText); got != "(2026-03-01,dml,1,) (2026-03-08,a,8,) (2026-03-08,b,80,) (2026-03-09,a,9,) (2026-03-09,b,90,) (2026-03-10,a,10,) (2026-03-10,b,100,)" {
		t.Errorf("after the failed refresh: %s", got)
	}

	e.exec(`DELETE FROM ev WHERE k = 'zero'`)
	res = refresh(t, r, reqWindow(f))
	checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonQueryChanged)
	if got := e.value(targetText); got != "(2026-03-01,dml,1,) (2026-03-08,a,8,12) (2026-03-08,b,80,1) (2026-03-09,a,9,11) (2026-03-09,b,90,1) (2026-03-10,a,10,10) (2026-03-10,b,100,1)" {
		t.Errorf("after the next refresh: %s", got)
	}
}

// A full refresh's DELETE leaves every row it deleted dead (a TRUNCATE left
// none): they count towards the VACUUM after it like any refresh's, and
// once they reach four windows' worth (here the floor, 4000 rows) rwc
// vacuums the target right after, when autovacuum does not (off on the
// table here).
func TestFullRefreshCountsDeadRows(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, r, reqWindow(f)) // created: vacuumed, nothing dead
	e.exec(`ALTER TABLE t SET (autovacuum_enabled = off)`)
	vacuums := func() int64 { return e.count(`SELECT pg_stat_get_vacuum_count('t'::regclass)`) }

	e.exec(`INSERT INTO t SELECT DATE '2026-03-01', 'dml', i FROM generate_series(1, 100) i`)
	refresh(t, r, run.Request{Flow: f, Mode: run.Full})
	if dead := e.count(`SELECT dead_rows FROM rwc.flows`); dead != 106 {
		t.Errorf("dead_rows %d after a full refresh of 106 rows, want 106", dead)
	}

	before := vacuums()
	e.exec(`INSERT INTO t SELECT DATE '2026-03-01', 'dml', i FROM generate_series(1, 5000) i`)
	refresh(t, r, run.Request{Flow: f, Mode: run.Full})
	if dead := e.count(`SELECT dead_rows FROM rwc.flows`); dead != 0 {
		t.Errorf("dead_rows %d after a full refresh that deleted 5006 rows, want 0: it should have vacuumed", dead)
	}
	if after := vacuums(); after != before+1 {
		t.Errorf("the target was vacuumed %d times during the full refresh, want once", after-before)
	}
}

// A column change that waits for its lock behind a session holding one on
// the target (a long report, an idle transaction) does not make the readers
// that come after it queue behind it until that session ends: it tries in
// short attempts, and a reader gets through between two. The refresh
// completes once the session ends.
func TestColumnChangeWaitingForItsLockLetsReadersThrough(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	refresh(t, r, reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
	ctx := context.Background()
	holder, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT count(*) FROM t`); err != nil { // ACCESS SHARE until it ends
		t.Fatal(err)
	}

	f := flow(t, gatedSpec(dailyColumns+"      w: integer\n", "SELECT d, k, v, v AS w FROM ev"), "t")
	done := make(chan run.Result, 1)
	go func() { done <- r.Refresh(ctx, reqWindow(f)) }()
	for e.count(`SELECT count(*) FROM pg_locks WHERE relation = 't'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted`) == 0 {
		time.Sleep(5 * time.Millisecond)
	}

	// A generous bound on a reader's wait, far above one attempt (200 ms)
	// and far below the refresh's lock timeout (10 s): queued behind one
	// long wait, the reader would wait until the holder ends.
	read := make(chan error, 1)
	go func() {
		var n int64
		read <- e.db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n)
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("a reader waited 5 s behind the column change, which waits for a session's lock")
	}
	select {
	case res := <-done:
		t.Fatalf("the refresh ended while a session held a lock on its target: %v", res.Err)
	default:
	}

	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Err != nil {
		t.Fatalf("refresh: %v", res.Err)
	}
	if got := e.value(targetText); got != "(2026-03-08,a,8,8) (2026-03-08,b,80,80) (2026-03-09,a,9,9) (2026-03-09,b,90,90) (2026-03-10,a,10,10) (2026-03-10,b,100,100)" {
		t.Errorf("after the refresh: %s", got)
	}
}

// A retype the server refuses (a stored value its cast cannot convert) is
// reported in rwc's words, and changes nothing.
func TestColumnChangeRefusedByServer(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	refresh(t, e.runner(now0), reqWindow(flow(t, gatedSpec(dailyColumns, "SELECT d, k, v FROM ev"), "t")))
	before := e.value(targetText)
	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 10 * time.Second, AllowDestructive: true})
	res := r.Refresh(context.Background(), reqWindow(flow(t, gatedSpec("      d: date\n      k: integer\n      v: integer\n", "SELECT d, 1 AS k, v FROM ev"), "t")))
	want := `flow t: column_retyped:k failed: invalid input syntax for type integer: "a" (SQLSTATE 22P02); nothing was changed`
	if res.Err == nil || res.Err.Error() != want {
		t.Fatalf("refresh: %v\nwant %s", res.Err, want)
	}
	if got := e.value(targetText); got != before {
		t.Errorf("after the refused retype: %s, want %s", got, before)
	}
	if got := e.value(`SELECT columns FROM rwc.flows`); !strings.Contains(got, `{"name": "k", "type": "text"}`) {
		t.Errorf("the state's columns changed: %s", got)
	}
}

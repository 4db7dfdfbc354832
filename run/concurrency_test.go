package run_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// concurrentSpecs are three flows, one reading another's target, over a
// source whose rows take a little time each so that two applies overlap.
var concurrentSpecs = map[string]string{
	"a.yaml": `pipeline: pa
tables:
  daily:
    replace_where: d >= date('2026-03-05')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, slow(v) AS v FROM ev
  totals:
    replace_where: d >= date('2026-03-07')
    columns:
      d: date
      total: bigint
    query: |
      SELECT d, sum(v) AS total FROM daily GROUP BY d
`,
	"b.yaml": `pipeline: pb
schema: reporting
tables:
  by_key:
    replace_where: k in ['a', 'b']
    columns:
      k: text
      d: date
      v: integer
    query: |
      SELECT k, d, slow(v) AS v FROM ev
`,
}

func seedConcurrent(e *env) {
	e.t.Helper()
	e.seedDaily()
	e.exec(`CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$`)
}

// targetsOf is every target's rows, labelled.
func targetsOf(e *env) []string {
	return e.rows(`SELECT 'daily', d, k, v::bigint FROM daily UNION ALL SELECT 'totals', d, NULL, total FROM totals
		UNION ALL SELECT 'by_key', d, k, v FROM reporting.by_key`)
}

// Two `rwc apply` at once on a fresh database (not even the state schema
// exists) both succeed, one waiting for the other's locks, and leave what
// two applies one after the other leave.
func TestConcurrentApplies(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, concurrentSpecs)

	// The reference: one apply after the other.
	ref := newEnv(t)
	seedConcurrent(ref)
	for i := 0; i < 2; i++ {
		if code, out := runRWC(t, ref.dsn, "apply", "--allow-dirty", dir); code != 0 {
			t.Fatalf("sequential apply %d exited %d:\n%s", i, code, out)
		}
	}
	want := targetsOf(ref)
	if len(want) != 12+4+20 {
		t.Fatalf("reference targets have %d rows, want 36: %v", len(want), want)
	}

	db, dsn := pgtest.DB(t)
	e := &env{t: t, db: db, dsn: dsn}
	e.seedDaily()
	e.exec(`CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$`)
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	for i := range 2 {
		cmd := rwcCmd(t, dsn, "apply", "--allow-dirty", dir)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	defer func() {
		if t.Failed() {
			t.Logf("outputs:\n%s\n%s", outs[0].String(), outs[1].String())
		}
	}()
	for i := range 2 {
		if errs[i] != nil {
			t.Errorf("apply %d: %v:\n%s", i, errs[i], outs[i].String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	pgtest.SameRows(t, "targets after two concurrent applies", targetsOf(e), want)
	pgtest.SameRows(t, "rwc.flows", e.rows(`SELECT flow, target_schema, target_table, last_refresh_at IS NOT NULL FROM rwc.flows`),
		[]string{"(by_key,reporting,by_key,t)", "(daily,public,daily,t)", "(totals,public,totals,t)"})
	if n := e.count(`SELECT count(*) FROM rwc.deployments`); n != 2 {
		t.Errorf("%d deployments, want 2", n)
	}
	pgtest.SameRows(t, "schema_version rows", e.rows(`SELECT version FROM rwc.schema_version`), ref.rows(`SELECT version FROM rwc.schema_version`))

	// Each flow: one create that inserted the window, then one incremental
	// refresh that found nothing changed (the sources did not move, and the
	// other apply's writes are rwc's own) and wrote nothing.
	wantRows := map[string]int64{"daily": 12, "totals": 4, "by_key": 20}
	evs, err := run.Events(context.Background(), db, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	perFlow := map[string][]run.Event{}
	for _, ev := range evs {
		perFlow[ev.Flow] = append(perFlow[ev.Flow], ev)
	}
	for flow, n := range wantRows {
		got := perFlow[flow]
		var desc []string
		for _, ev := range got {
			desc = append(desc, fmt.Sprintf("%s %s %v -%d +%d", ev.Kind, ev.Action, ev.Reasons, ev.RowsDeleted, ev.RowsInserted))
		}
		wantDesc := []string{
			fmt.Sprintf("planning_information create [FIRST_REFRESH] -0 +%d", n),
			"planning_information incremental [] -0 +0",
		}
		if strings.Join(desc, "; ") != strings.Join(wantDesc, "; ") {
			t.Errorf("%s events:\n got  %v\n want %v", flow, desc, wantDesc)
		}
	}
	if len(perFlow) != len(wantRows) {
		t.Errorf("events for flows %v", perFlow)
	}
	if n := e.advisoryLocks(); n != 0 {
		t.Errorf("%d advisory locks left", n)
	}
}

// Many Migrate calls at once on a fresh database all succeed and leave one
// state schema at the current version.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.DB(t)
	const n = 8
	db.SetMaxOpenConns(n)
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		go func() {
			<-start
			errs <- run.Migrate(context.Background(), db)
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Migrate: %v", err)
		}
	}
	e := &env{t: t, db: db}
	// What one Migrate alone leaves: the same version, in one row, and the
	// same tables (the state schema grows; this test need not follow it).
	ref := newEnv(t)
	pgtest.SameRows(t, "schema_version rows", e.rows(`SELECT version FROM rwc.schema_version`), ref.rows(`SELECT version FROM rwc.schema_version`))
	pgtest.SameRows(t, "tables in schema rwc", e.rows(`SELECT tablename FROM pg_tables WHERE schemaname = 'rwc'`),
		ref.rows(`SELECT tablename FROM pg_tables WHERE schemaname = 'rwc'`))
	for _, table := range []string{"schema_version", "deployments", "flows", "events", "fingerprints"} {
		if n := e.count(`SELECT count(*) FROM pg_tables WHERE schemaname = 'rwc' AND tablename = $1`, table); n != 1 {
			t.Errorf("no table rwc.%s", table)
		}
	}
}

// A refresh that cannot get its flow's lock in time fails, says so, and
// changes nothing; once the lock is free it runs.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = v + 1000`)
	before := e.rows(`SELECT * FROM t`)
	flows := e.rows(`SELECT * FROM rwc.flows`)

	// A refresh that ignored its lock timeout would wait forever: bound it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var pid int
	if err := holder.QueryRowContext(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock(hashtextextended('rwc.flow:' || 't', 0))) l`).Scan(&pid); err != nil {
		t.Fatal(err)
	}

	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 200 * time.Millisecond})
	started := time.Now()
	res := r.Refresh(ctx, reqWindow(f))
	took := time.Since(started)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "lock") || !strings.Contains(res.Err.Error(), "200ms") {
		t.Fatalf("refresh with the lock held elsewhere: err = %v, want a lock timeout", res.Err)
	}
	// The session holding it is named, with how to end it.
	if want := fmt.Sprintf("pg_terminate_backend(%d)", pid); !strings.Contains(res.Err.Error(), fmt.Sprintf("pid %d", pid)) || !strings.Contains(res.Err.Error(), want) {
		t.Errorf("refresh with the lock held elsewhere: err = %v, want the holder's pid %d and %s", res.Err, pid, want)
	}
	if took > 5*time.Second {
		t.Errorf("the refresh gave up after %s, want about 200ms", took)
	}
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), before)
	pgtest.SameRows(t, "rwc.flows", e.rows(`SELECT * FROM rwc.flows`), flows)

	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtextextended('rwc.flow:' || 't', 0))`); err != nil {
		t.Fatal(err)
	}
	refresh(t, r, reqWindow(f))
	pgtest.SameRows(t, "target once the lock is free", e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM ev WHERE d >= '2026-03-08'`))
}

// The first refreshes of two flows whose targets share a schema that does
// not exist yet, run at once (two `rwc refresh`, or applies of different
// spec sets), both succeed: creating the schema must not race.
func TestConcurrentFirstRefreshesInNewSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedConcurrent(e)
	p := project(t, map[string]string{"p.yaml": `pipeline: p
schema: fresh
tables:
  one:
    replace_where: d >= date('2026-03-05')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, slow(v) AS v FROM ev
  two:
    replace_where: d >= date('2026-03-05')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, slow(v) AS v FROM ev
`})
	var wg sync.WaitGroup
	results := make([]run.Result, 2)
	for i, name := range []string{"one", "two"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.runner(now0).Refresh(context.Background(), reqWindow(p.Flow(name)))
		}()
	}
	wg.Wait()
	for _, res := range results {
		if res.Err != nil {
			t.Errorf("%s: %v", res.Flow, res.Err)
		}
	}
	want := e.rows(`SELECT * FROM ev WHERE d >= '2026-03-05'`)
	for _, res := range results {
		if res.Err == nil {
			pgtest.SameRows(t, res.Flow, e.rows(`SELECT * FROM fresh.`+res.Flow), want)
		}
	}
}

// A target row that someone changes after a refresh took its snapshot, and
// before its DELETE reaches the row, makes the DELETE fail with a
// serialization error. The refresh then runs again, sees the change, and
// recomputes around it: the user's apply does not fail for it.
func TestRefreshRetriesAfterConcurrentTargetChange(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	// The source changes on 03-09, so the next refresh rewrites that day.
	e.exec(`UPDATE ev SET v = v + 1000 WHERE d = '2026-03-09'`)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Hold the target, so that the refresh waits with its snapshot taken
	// (it reads the target only inside its transaction).
	holder, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `LOCK TABLE t IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var logMu sync.Mutex
	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 20 * time.Second,
		Log: writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return log.Write(p) })})
	done := make(chan run.Result, 1)
	go func() { done <- r.Refresh(ctx, reqWindow(f)) }()
	for e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	// Someone else's DML, committed after the refresh's snapshot, on the
	// day the refresh is about to rewrite.
	if _, err := holder.ExecContext(ctx, `UPDATE t SET v = -1 WHERE d = '2026-03-09' AND k = 'a'`); err != nil {
		t.Fatal(err)
	}
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Err != nil {
		t.Fatalf("refresh: %v", res.Err)
	}
	checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
	logMu.Lock()
	if !strings.Contains(log.String(), "refreshing again") {
		t.Errorf("the first attempt did not fail on the concurrent change (log: %q): the test did not test the retry", log.String())
	}
	logMu.Unlock()
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM ev WHERE d >= '2026-03-08'`))
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// A refresh that cannot get a second connection for its target probe (a
// pool of one, a role limited to one connection) probes on its own.
func TestRefreshWithOneConnection(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	db, err := sql.Open("postgres", e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	r := run.New(db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, day := range []string{"", "2026-03-09"} {
		if day != "" {
			e.exec(`UPDATE ev SET v = v + 1 WHERE d = $1`, day)
		}
		res := r.Refresh(ctx, reqWindow(f))
		if res.Err != nil {
			t.Fatalf("refresh %d on one connection: %v", i+1, res.Err)
		}
	}
	pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM ev WHERE d >= '2026-03-08'`))

	// A changed dimension forces the whole window; the target's probe,
	// which only picks the reason then, still runs before the write: after
	// it, it would see rwc's own rows and report them as external DML.
	e.exec(`CREATE TABLE names (k text, name text); INSERT INTO names VALUES ('a', 'A'), ('b', 'B')`)
	dim := flow(t, map[string]string{"p.yaml": strings.Replace(dimensionSpec, "  t:", "  t2:", 1)}, "t2")
	for i, want := range []compile.Reason{compile.ReasonFirstRefresh, compile.ReasonCannotPushPredicate, compile.ReasonExternalChange} {
		switch i {
		case 1:
			e.exec(`UPDATE names SET name = 'A2' WHERE k = 'a'`)
		case 2:
			e.exec(`UPDATE names SET name = 'A3' WHERE k = 'a'; DELETE FROM t2 WHERE d = '2026-03-10' AND k = 'b'`)
		}
		res := r.Refresh(ctx, reqWindow(dim))
		if res.Err != nil {
			t.Fatalf("dimension refresh %d on one connection: %v", i+1, res.Err)
		}
		if fmt.Sprint(res.Reasons) != fmt.Sprint([]compile.Reason{want}) {
			t.Errorf("dimension refresh %d on one connection: reasons %v, want [%s]", i+1, res.Reasons, want)
		}
	}
}

package run_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/session"
)

// slowSpecs: flow a copies ev (20 rows); flow b reads a's target (so a refreshes
// first) through slow(), which sleeps slowness.secs per row (only for the
// rows of day slowness.day of the month, when it is set).
var slowSpecs = map[string]string{"p.yaml": `pipeline: p
tables:
  a:
    replace_where: d >= date('2026-03-01')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, v FROM ev
  b:
    replace_where: d >= date('2026-03-05')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, slow(v) AS v FROM a
`}

func newSlowEnv(t *testing.T, secs float64) *env {
	t.Helper()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE slowness (secs float8 NOT NULL, day int)`)
	e.exec(`INSERT INTO slowness VALUES ($1, NULL)`, secs)
	e.exec(`CREATE FUNCTION slow(x int) RETURNS int LANGUAGE sql AS
		'SELECT x FROM (SELECT pg_sleep(CASE WHEN day IS NULL OR x IN (day, 10 * day) THEN secs ELSE 0 END) FROM slowness) s'`)
	return e
}

// sleeping is the backend running b's INSERT, asleep in slow() (0: none
// is).
func (e *env) sleeping() int { return e.slowBackend(`AND wait_event = 'PgSleep'`) }

// running is the backend running b's INSERT, asleep or not (0: none is).
func (e *env) running() int { return e.slowBackend(``) }

func (e *env) slowBackend(cond string) int {
	e.t.Helper()
	var pid int
	err := e.db.QueryRow(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
		AND state = 'active' AND query LIKE '%slow(%' ` + cond + ` LIMIT 1`).Scan(&pid)
	if err != nil && err != sql.ErrNoRows {
		e.t.Fatal(err)
	}
	return pid
}

// within polls cond every 20ms for up to d.
func within(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// proc is an rwc process the test started.
type proc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{} // closed when it exited, with err
	err  error
}

// slowApply starts rwc apply on dir and waits until b's INSERT sleeps in
// the server; it returns the process and the backend's pid.
func slowApply(t *testing.T, e *env, dir string) (*proc, int) {
	t.Helper()
	return slowRun(t, e, "apply", "--allow-dirty", dir)
}

// slowRun is slowApply for rwc args.
func slowRun(t *testing.T, e *env, args ...string) (*proc, int) {
	t.Helper()
	rwcBinary(t)
	p := &proc{cmd: rwcCmd(t, e.dsn, args...), out: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		// The server ends the killed rwc's statement by itself now; the
		// database cannot be dropped before.
		within(10*time.Second, func() bool { return e.running() == 0 })
	})
	var pid int
	if !within(20*time.Second, func() bool { pid = e.sleeping(); return pid != 0 }) {
		t.Fatalf("b's INSERT never started:\n%s", p.out)
	}
	return p, pid
}

// exitCode waits up to d for the process to exit and returns its status
// (-1: killed by a signal).
func (p *proc) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("rwc did not exit within %s:\n%s", d, p.out)
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// serverClear checks, within d, that no session still runs b's INSERT or
// holds a flow's lock.
func (e *env) serverClear(d time.Duration) {
	e.t.Helper()
	if !within(d, func() bool { return e.running() == 0 && e.advisoryLocks() == 0 }) {
		e.t.Fatalf("%s on, the server still runs b's INSERT (pid %d) or holds %d advisory locks", d, e.running(), e.advisoryLocks())
	}
}

// resumes checks that the next rwc apply, with nothing slow and little
// patience for a lock, succeeds and fills b.
func (e *env) resumes(dir string) {
	e.t.Helper()
	e.exec(`UPDATE slowness SET secs = 0`)
	if code, out := runRWC(e.t, e.dsn, "apply", "--allow-dirty", "--lock-timeout", "3s", dir); code != 0 {
		e.t.Fatalf("the next rwc apply: exit %d:\n%s", code, out)
	}
	if n := e.count(`SELECT count(*) FROM b`); n != 12 {
		e.t.Errorf("b has %d rows after the next apply, want 12", n)
	}
}

// SIGINT or SIGTERM during a statement: rwc has the server cancel it,
// rolls back, releases the flow's lock, says what committed and that the
// next run resumes, and exits 130 or 143, soon; the next apply then runs
// at once.
func TestInterruptCancelsTheStatement(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newSlowEnv(t, 20)
			dir := writeSpecs(t, slowSpecs)
			p, pid := slowApply(t, e, dir)
			out := p.out
			if app := e.value(`SELECT application_name FROM pg_stat_activity WHERE pid = $1`, pid); app != session.FlowApplicationName("b") {
				t.Errorf("the session refreshing b is named %q, want %q", app, session.FlowApplicationName("b"))
			}
			sent := time.Now()
			if err := p.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			code := p.exitCode(t, 5*time.Second)
			took := time.Since(sent)
			t.Logf("exit %d after %s:\n%s", code, took, out)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			if took > 3*time.Second {
				t.Errorf("rwc took %s to exit after %s", took, c.name)
			}
			for _, want := range []string{
				"rwc: " + c.name + ": cancelling the running statement",
				"interrupted: the refresh of flow b was cancelled on the server and rolled back",
				"committed before the interrupt, and kept: the refresh of flow a (create)",
				"the deployment was not recorded; the next rwc apply resumes",
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output does not say %q", want)
				}
			}
			if strings.Contains(out.String(), "pq:") {
				t.Errorf("output has the driver's words")
			}
			e.serverClear(time.Second)
			if e.value(`SELECT to_regclass('b') IS NULL`) != "true" || e.count(`SELECT count(*) FROM a`) != 20 {
				t.Errorf("after the interrupt: b exists or a is not filled")
			}
			e.resumes(dir)
		})
	}
}

// An interrupted backfill keeps the batches it committed, says which,
// and the next apply goes on at the batch that was rolled back.
func TestInterruptBackfillBatch(t *testing.T) {
	t.Parallel()
	e := newSlowEnv(t, 0)
	dir := writeSpecs(t, slowSpecs)
	mustApply(t, e, dir)
	if err := os.MkdirAll(dir+"/backfills", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/backfills/early.yaml", []byte("backfill: b\nwhere: d >= date('2026-03-01') && d <= date('2026-03-04')\nreason: the first days\nbatch: 1d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.exec(`UPDATE slowness SET secs = 20, day = 3`) // batch 3 of 4
	p, _ := slowApply(t, e, dir)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.exitCode(t, 5*time.Second)
	t.Logf("exit %d:\n%s", code, p.out)
	label := "backfill " + filepath.Base(dir) + "/backfills/early.yaml (flow b)"
	for _, want := range []string{
		"interrupted: batch 3 of 4 of " + label + " was cancelled on the server and rolled back",
		"committed before the interrupt, and kept: the refresh of flow a (",
		"; the refresh of flow b (",
		"; " + label + ": batches 1-2 of 4\n",
		"each backfill goes on at its first batch not committed",
	} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if code != 143 {
		t.Errorf("exit %d, want 143", code)
	}
	e.serverClear(time.Second)
	e.exec(`UPDATE slowness SET secs = 0`)
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", "--lock-timeout", "3s", dir)
	if code != 0 || strings.Contains(out, "batch 1/4") || strings.Contains(out, "batch 2/4") || !strings.Contains(out, "batch 3/4") || !strings.Contains(out, "batch 4/4") {
		t.Errorf("the next apply, exit %d, did not go on at batch 3:\n%s", code, out)
	}
}

// rwc refresh, interrupted, says what it committed too, and what running
// it again does.
func TestInterruptRefresh(t *testing.T) {
	t.Parallel()
	e := newSlowEnv(t, 20)
	dir := writeSpecs(t, slowSpecs)
	p, _ := slowRun(t, e, "refresh", "a", "b", "--specs", dir, "--allow-dirty")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.exitCode(t, 5*time.Second)
	t.Logf("exit %d:\n%s", code, p.out)
	for _, want := range []string{
		"interrupted: the refresh of flow b was cancelled on the server and rolled back",
		"committed before the interrupt, and kept: the refresh of flow a (create)",
		"running the same rwc refresh again is safe",
	} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	e.serverClear(time.Second)
}

// A second signal exits at once, even while the statement is not
// cancelled yet (here its backend is stopped, so that the cancel request
// waits); the server then ends the statement, and the next apply runs.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	e := newSlowEnv(t, 20)
	dir := writeSpecs(t, slowSpecs)
	p, pid := slowApply(t, e, dir)
	backend, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := backend.Signal(syscall.SIGSTOP); err != nil {
		t.Skipf("cannot stop the server's backend %d: %v", pid, err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			backend.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	select {
	case <-p.done:
		t.Fatalf("rwc exited (%v) before its statement was cancelled:\n%s", p.err, p.out)
	default:
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.exitCode(t, 5*time.Second)
	took := time.Since(sent)
	t.Logf("exit %d after %s:\n%s", code, took, p.out)
	if code != 130 || took > time.Second {
		t.Errorf("second SIGINT: exit %d after %s, want 130 at once", code, took)
	}
	if !strings.Contains(p.out.String(), "rwc: SIGINT again: exiting at once") {
		t.Errorf("output does not say it exits at once")
	}
	resume()
	e.serverClear(3 * time.Second)
	e.resumes(dir)
}

// kill -9 during a statement: the server notices the client gone within
// about a second (client_connection_check_interval) and ends the
// statement, its transaction and its lock; the next apply then runs,
// instead of failing for as long as the statement would have run.
func TestKilledClientsStatementEnds(t *testing.T) {
	t.Parallel()
	e := newSlowEnv(t, 20)
	dir := writeSpecs(t, slowSpecs)
	p, _ := slowApply(t, e, dir)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.exitCode(t, 5*time.Second)
	killed := time.Now()
	e.serverClear(3 * time.Second)
	t.Logf("the server ended the statement %s after the kill", time.Since(killed))
	e.resumes(dir)
}

// A flow whose lock another rwc holds: the refresh that gives up names
// that session, what it does and since when, whether its client is still
// there, and how to end it.
func TestFlowBusyNamesTheHolder(t *testing.T) {
	t.Parallel()
	e := newSlowEnv(t, 20)
	dir := writeSpecs(t, slowSpecs)
	_, pid := slowApply(t, e, dir)
	code, out := runRWC(t, e.dsn, "refresh", "b", "--specs", dir, "--allow-dirty", "--lock-timeout", "500ms")
	t.Log(out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"flow b is being refreshed by another rwc",
		fmt.Sprintf("pid %d", pid),
		"application_name " + session.FlowApplicationName("b"),
		"client 127.0.0.1:",
		"connected at 20",
		"in a transaction since 20",
		"active for ",
		"query started at 20",
		"waiting on Timeout:PgSleep",
		"the server checks an rwc session's client every second",
		"not free within 500ms",
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
}

// The session holding a flow's lock is named after the flow while it
// holds it, and named as it started once it goes back to the pool; a name
// the connection string gives is kept.
func TestFlowSessionName(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	for _, c := range []struct{ dsn, during string }{
		{e.dsn, session.FlowApplicationName("t")},
		{e.dsn + "&application_name=nightly", "nightly"},
	} {
		db, err := session.Open(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var during string
		req := reqWindow(f)
		req.Record = func(ctx context.Context, tx *sql.Tx, _ *run.Result) error {
			return tx.QueryRowContext(ctx, `SELECT current_setting('application_name')`).Scan(&during)
		}
		if res := run.New(db, run.Options{Now: func() time.Time { return now0 }}).Refresh(context.Background(), req); res.Err != nil {
			t.Fatal(res.Err)
		}
		if during != c.during {
			t.Errorf("%s: application_name %q while refreshing, want %q", c.dsn, during, c.during)
		}
		// The session is idle in db's pool now.
		if n := e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%flow=%'`); n != 0 {
			t.Errorf("%s: %d sessions still named after a flow once the refresh is done", c.dsn, n)
		}
	}
}

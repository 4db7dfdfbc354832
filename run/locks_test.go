package run_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lockHolder is another session that holds a table lock in a transaction
// it leaves open, as a psql left at a LOCK would; release ends it.
func lockHolder(t *testing.T, e *env, lock string) (pid int, release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	release = func() { tx.Rollback(); conn.Close() }
	t.Cleanup(release)
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, lock); err != nil {
		t.Fatal(err)
	}
	return pid, release
}

// applyLocked runs rwc apply --lock-timeout 500ms on dir while another
// session holds lock, and checks that it failed soon, in rwc's words
// (saying each of want), and changed nothing: the targets and rwc's state
// (read once the lock is released) are as they were, no deployment was
// recorded, and no advisory lock is left.
func applyLocked(t *testing.T, e *env, dir, lock string, want ...string) string {
	t.Helper()
	rwcBinary(t) // built before the clock starts
	state := func() string {
		return fmt.Sprint(e.rows(`SELECT flow, columns, query_fingerprint, last_refresh_at FROM rwc.flows`),
			e.rows(`SELECT * FROM rwc.deployments`), e.rows(`SELECT to_regclass('t') IS NULL`))
	}
	before, rows := state(), ""
	if e.value(`SELECT to_regclass('t') IS NOT NULL`) == "true" {
		rows = fmt.Sprint(e.rows(`SELECT * FROM t`))
	}
	pid, release := lockHolder(t, e, lock)
	started := time.Now()
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", "--lock-timeout", "500ms", dir)
	took := time.Since(started)
	release()
	if code == 0 {
		t.Fatalf("rwc apply with %q held elsewhere succeeded:\n%s", lock, out)
	}
	if took > 5*time.Second {
		t.Errorf("rwc apply --lock-timeout 500ms gave up after %s, want about 500ms", took)
	}
	want = append(want, fmt.Sprintf("pid %d", pid), lock, "500ms", fmt.Sprintf("pg_terminate_backend(%d)", pid))
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output does not say %q:\n%s", w, out)
		}
	}
	for _, bad := range []string{"pq:", "at column"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q (the driver's words, or a position in rwc's own SQL):\n%s", bad, out)
		}
	}
	if got := state(); got != before {
		t.Errorf("rwc apply changed the state:\n was %s\n now %s", before, got)
	}
	if rows != "" {
		if got := fmt.Sprint(e.rows(`SELECT * FROM t`)); got != rows {
			t.Errorf("rwc apply changed the target:\n was %s\n now %s", rows, got)
		}
	}
	if n := e.advisoryLocks(); n != 0 {
		t.Errorf("%d advisory locks held after rwc apply ended", n)
	}
	return out
}

// A source another session locks ACCESS EXCLUSIVE: rwc apply gives up
// after --lock-timeout (the type check, which reads the source's columns,
// waits too), naming the source and the session holding it.
func TestLockTimeoutSourceLocked(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	dir := writeSpecs(t, map[string]string{"p.yaml": dailySpec})
	t.Log(applyLocked(t, e, dir, `LOCK TABLE ev IN ACCESS EXCLUSIVE MODE`, "source ev"))
}

// The target locked by another session: the refresh's write gives up after
// --lock-timeout, naming the target and the session holding it.
func TestLockTimeoutTargetLocked(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ACCESS EXCLUSIVE", "SHARE"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e, dir := appliedWhole(t, wholeSpec)
			t.Log(applyLocked(t, e, dir, `LOCK TABLE t IN `+mode+` MODE`, "target public.t", "idle in transaction"))
		})
	}
}

// appliedWhole is a daily database with spec applied once, and its
// sources changed since, so that the next refresh has work to do.
func appliedWhole(t *testing.T, spec string) (*env, string) {
	t.Helper()
	e := newDailyEnv(t)
	dir := writeSpecs(t, map[string]string{"p.yaml": spec})
	mustApply(t, e, dir)
	e.exec(`UPDATE ev SET v = v + 1000`)
	return e, dir
}

// wholeSpec is dailySpec with a window that holds every row of ev whenever
// it runs.
var wholeSpec = strings.Replace(dailySpec, "d >= date_add(current_date(), -2)", "d >= date('2026-03-05')", 1)

// rwc's own state tables locked by another session: the statements on
// them outside a refresh (the state's migration, the preflight that reads
// rwc.flows) give up after --lock-timeout too, and say which table.
func TestLockTimeoutStateLocked(t *testing.T) {
	t.Parallel()
	for _, table := range []string{"rwc.schema_version", "rwc.flows"} {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			e, dir := appliedWhole(t, wholeSpec)
			t.Log(applyLocked(t, e, dir, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`, "state table "+table))
		})
	}
}

// rwc plan reads the catalog and EXPLAINs each target for its row
// estimate: with a target locked, it still finishes within --lock-timeout
// (without that estimate).
func TestLockTimeoutPlan(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	dir := writeSpecs(t, map[string]string{"p.yaml": wholeSpec})
	mustApply(t, e, dir)
	_, release := lockHolder(t, e, `LOCK TABLE t IN ACCESS EXCLUSIVE MODE`)
	defer release()
	started := time.Now()
	code, out := runRWC(t, e.dsn, "plan", "--lock-timeout", "500ms", dir)
	took := time.Since(started)
	if took > 5*time.Second {
		t.Errorf("rwc plan --lock-timeout 500ms took %s with the target locked", took)
	}
	t.Logf("rwc plan took %s:\n%s", took, out)
	if code != 0 || strings.Contains(out, "pq:") {
		t.Errorf("rwc plan with the target locked: exit %d:\n%s", code, out)
	}
}

// A lock timeout names only sessions whose locks conflict with rwc's: a
// reader of a source, idle in its transaction, is not what a refresh
// waiting on a row lock waits for, and must not be offered for
// termination (found in review).
func TestLockTimeoutBlamesNoInnocentReader(t *testing.T) {
	e, dir := appliedWhole(t, wholeSpec)
	_, releaseRow := lockHolder(t, e, `UPDATE t SET v = v WHERE d = '2026-03-06'`)
	defer releaseRow()
	reader, releaseReader := lockHolder(t, e, `SELECT count(*) FROM ev`)
	defer releaseReader()
	code, out := runRWC(t, e.dsn, "refresh", "t", "--specs", dir, "--allow-dirty", "--lock-timeout", "500ms")
	if code == 0 || strings.Contains(out, strconv.Itoa(reader)) || strings.Contains(out, "pq:") {
		t.Errorf("exit %d, and the message names the reader %d or the driver:\n%s", code, reader, out)
	}
}

// The loss check of an override on a protected flow is bounded by the
// lock timeout too, and says so in rwc's words (found in review).
func TestLossCheckLockTimeout(t *testing.T) {
	e, dir := appliedWhole(t, strings.Replace(wholeSpec, "    columns:", "    properties:\n      reset_allowed: false\n    columns:", 1))
	for _, lock := range []string{`LOCK TABLE t IN ACCESS EXCLUSIVE MODE`, `LOCK TABLE rwc.deployments IN ACCESS EXCLUSIVE MODE`} {
		_, release := lockHolder(t, e, lock)
		start := time.Now()
		code, out := runRWC(t, e.dsn, "refresh", "t", "--where", "d >= date('2026-03-01')", "--specs", dir, "--allow-dirty", "--lock-timeout", "500ms")
		release()
		if code == 0 || time.Since(start) > 5*time.Second || strings.Contains(out, "pq:") || strings.Contains(out, "the query failed") {
			t.Errorf("%s: exit %d after %s:\n%s", lock, code, time.Since(start), out)
		}
	}
}

// rwc status and rwc events only read, but rwc's state locked by another
// session (an ALTER, a DROP) makes them wait too: --lock-timeout bounds
// that, and the message names the table and the session holding it.
func TestLockTimeoutStatusAndEvents(t *testing.T) {
	t.Parallel()
	e, dir := appliedWhole(t, wholeSpec)
	for _, tc := range []struct{ table, cmd string }{
		{"rwc.deployments", "status"}, {"rwc.events", "events"}, {"rwc.backfills", "status"},
	} {
		t.Run(tc.cmd+" "+tc.table, func(t *testing.T) {
			pid, release := lockHolder(t, e, `LOCK TABLE `+tc.table+` IN ACCESS EXCLUSIVE MODE`)
			started := time.Now()
			args := []string{tc.cmd, "--lock-timeout", "500ms"}
			if tc.cmd == "status" {
				args = append(args, "--specs", dir)
			}
			code, out := runRWC(t, e.dsn, args...)
			took := time.Since(started)
			release()
			if code == 0 || took > 5*time.Second {
				t.Fatalf("rwc %s with %s locked: exit %d after %s, want a failure within about 500ms:\n%s", tc.cmd, tc.table, code, took, out)
			}
			for _, w := range []string{"state table " + tc.table, fmt.Sprintf("pid %d", pid), "500ms"} {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "pq:") {
				t.Errorf("output has the driver's words:\n%s", out)
			}
		})
	}
}

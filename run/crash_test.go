package run_test

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// crashSpec copies ev with a fixed window; slow makes every row take 10ms,
// so a refresh spends seconds in its INSERT.
func crashSpec(slow bool) string {
	v := "v"
	if slow {
		v = "slow(v) AS v"
	}
	return `pipeline: p
tables:
  t:
    replace_where: d >= date('2026-03-03')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, ` + v + ` FROM ev
`
}

// A refresh killed with SIGKILL in the middle of its INSERT leaves the
// target, the state and the log exactly as before, holds no lock, and the
// next run completes: both for a first refresh (the target does not exist
// yet) and for a later one (the window's rows were already deleted inside
// the killed transaction).
func TestCrashMidInsertLeavesTargetAsBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first bool
	}{{"first refresh", true}, {"later refresh", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(`CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$;
				INSERT INTO ev SELECT DATE '2026-03-05', 'bulk' || i, i FROM generate_series(1, 1000) i`)
			fast := writeSpecs(t, map[string]string{"p.yaml": crashSpec(false)})
			slow := writeSpecs(t, map[string]string{"p.yaml": crashSpec(true)})
			if !tc.first {
				if code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", fast); code != 0 {
					t.Fatalf("first apply exited %d:\n%s", code, out)
				}
				e.exec(`INSERT INTO t VALUES ('2020-01-01', 'dml', 1)`)
			}
			e.exec(`UPDATE ev SET v = v + 1000`)
			state := func() []string {
				rows := []string{}
				if e.value(`SELECT to_regclass('public.t')::text`) != "<null>" {
					rows = append(rows, e.rows(`SELECT 'target', * FROM t`)...)
				}
				rows = append(rows, e.rows(`SELECT 'flows', * FROM rwc.flows`)...)
				rows = append(rows, e.rows(`SELECT 'events', * FROM rwc.events`)...)
				return append(rows, e.rows(`SELECT 'deployments', id FROM rwc.deployments`)...)
			}
			before := state()

			cmd := rwcCmd(t, e.dsn, "apply", "--allow-dirty", slow)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			// Wait for the INSERT to be running, then give it time to write rows.
			var pid int
			deadline := time.Now().Add(30 * time.Second)
			for pid == 0 {
				err := e.db.QueryRow(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()
					AND state = 'active' AND query LIKE 'INSERT INTO "public"."t"%' AND pid <> pg_backend_pid()`).Scan(&pid)
				switch {
				case err == sql.ErrNoRows:
				case err != nil:
					t.Fatal(err)
				}
				select {
				case err := <-exited:
					t.Fatalf("rwc apply ended (%v) before its INSERT was seen:\n%s", err, out.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no INSERT running after 30s:\n%s", out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("rwc apply: %v, want killed", err)
			}
			// The server backend outlives its client until it next talks to it.
			e.exec(`SELECT pg_terminate_backend($1)`, pid)
			for n := 0; ; n++ {
				if e.count(`SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 0 {
					break
				}
				if n > 1000 {
					t.Fatalf("backend %d still there", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}

			pgtest.SameRows(t, "target and state after the kill", state(), before)
			if n := e.advisoryLocks(); n != 0 {
				t.Fatalf("%d advisory locks left behind", n)
			}

			code, o := runRWC(t, e.dsn, "apply", "--allow-dirty", "--lock-timeout", "2s", fast)
			if code != 0 {
				t.Fatalf("apply after the kill exited %d:\n%s", code, o)
			}
			want := e.rows(`SELECT * FROM ev WHERE d >= '2026-03-03'`)
			if !tc.first {
				want = append(want, "(2020-01-01,dml,1)")
			}
			pgtest.SameRows(t, "target after the next apply", e.rows(`SELECT * FROM t`), sortedCopy(want))
			if n := e.advisoryLocks(); n != 0 {
				t.Fatalf("%d advisory locks left behind after the next apply", n)
			}
		})
	}
}

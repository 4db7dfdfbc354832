package run_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/rwc-dev/rwc/run"
)

// A refresh runs without JIT: PostgreSQL's estimate of a window of a
// large target runs high enough to JIT-compile its DELETE, which then
// costs more than the delete, and more the more history the target holds
// (docs/benchmarks.md, partitioned targets).
func TestRefreshRunsWithoutJIT(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`ALTER DATABASE ` + e.value(`SELECT current_database()`) + ` SET jit = on`)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	var jit string
	res := e.runner(now0).Refresh(context.Background(), run.Request{Flow: f, Mode: run.Window,
		Record: func(ctx context.Context, tx *sql.Tx, _ *run.Result) error {
			return tx.QueryRowContext(ctx, `SELECT current_setting('jit')`).Scan(&jit)
		}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if jit != "off" {
		t.Errorf("the refresh's transaction runs with jit = %s, want off", jit)
	}
}

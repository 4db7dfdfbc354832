package run_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// newCitusEnv is a test's database on the Citus cluster (pgtest.Citus),
// with the state schema in place; skipped, saying why, without Citus.
func newCitusEnv(t *testing.T) *env {
	t.Helper()
	db, dsn := pgtest.Citus(t)
	if err := run.Migrate(context.Background(), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return &env{t: t, db: db, dsn: dsn}
}

// citusSpec is the daily flow over a fact that Citus distributes (by k)
// joined with a reference dimension.
var citusSpec = strings.Replace(dailySpec, "SELECT d, k, v FROM ev",
	"SELECT e.d, e.k, e.v + kd.w AS v FROM ev e JOIN kd ON kd.k = e.k  -- rwc:nolint RW403", 1)

// On Citus, a flow over a distributed fact and a reference dimension
// refreshes incrementally as on one node: with nothing changed, nothing
// is recomputed (the fingerprints of shards, read on the workers, are
// stable from one refresh to the next); a late row recomputes its day
// only; a dimension change the whole window. Each time the target holds
// the query's rows.
func TestCitusDistributedSources(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.seedDaily()
	e.exec(`CREATE TABLE kd (k text PRIMARY KEY, w integer); INSERT INTO kd VALUES ('a', 1), ('b', 2), ('c', 3);
		SELECT create_distributed_table('ev', 'k'); SELECT create_reference_table('kd')`)
	f := flow(t, map[string]string{"p.yaml": citusSpec}, "t")
	same := func(when string) {
		t.Helper()
		if diff := e.rows(`(SELECT d, k, v FROM public.t EXCEPT ALL SELECT e.d, e.k, e.v + kd.w FROM ev e JOIN kd ON kd.k = e.k WHERE e.d >= '2026-03-08')
			UNION ALL (SELECT e.d, e.k, e.v + kd.w FROM ev e JOIN kd ON kd.k = e.k WHERE e.d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t)`); len(diff) > 0 {
			t.Errorf("%s: the target differs from the query's rows: %v", when, diff)
		}
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionCreate {
		t.Fatalf("first refresh: %s %v", res.Action, res.Reasons)
	}
	same("after the first refresh")
	for i := range 2 {
		if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 || res.RowsInserted != 0 {
			t.Errorf("refresh %d with nothing changed: %s %v %v, +%d rows; want nothing recomputed", i+2, res.Action, res.Reasons, res.Partitions, res.RowsInserted)
		}
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 7)`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || !slices.Equal(res.Partitions, []string{"2026-03-09"}) {
		t.Errorf("after a late row: %s %v %v; want 2026-03-09 recomputed", res.Action, res.Reasons, res.Partitions)
	}
	same("after a late row")
	e.exec(`UPDATE kd SET w = 10 WHERE k = 'a'`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionRecomputeWindow {
		t.Errorf("after the reference dimension changed: %s %v; want the window recomputed", res.Action, res.Reasons)
	}
	same("after the dimension changed")
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
		t.Errorf("nothing changed since: %s %v %v", res.Action, res.Reasons, res.Partitions)
	}
}

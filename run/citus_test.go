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
	quietThenLate(t, e, f, same)
	e.exec(`UPDATE kd SET w = 10 WHERE k = 'a'`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionRecomputeWindow {
		t.Errorf("after the reference dimension changed: %s %v; want the window recomputed", res.Action, res.Reasons)
	}
	same("after the dimension changed")
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
		t.Errorf("nothing changed since: %s %v %v", res.Action, res.Reasons, res.Partitions)
	}
}

// A target that Citus distributes (here by the user, co-located with its
// fact, after rwc created it) refreshes incrementally too: its rows are on
// the workers, inserted by their transactions, so what a refresh writes is
// fingerprinted in its transaction after the write, not recognised by the
// coordinator's transaction id at the next refresh. With nothing changed
// nothing is recomputed; a late row recomputes its day; DML on the target
// by anyone else is found and undone.
func TestCitusDistributedTarget(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.seedDaily()
	e.exec(`SELECT create_distributed_table('ev', 'k')`)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`SELECT create_distributed_table('public.t', 'k', colocate_with => 'ev')`)
	// Its rows moved to the shards: the first refresh after recomputes.
	refresh(t, e.runner(now0), reqWindow(f))
	same := func(when string) {
		t.Helper()
		if diff := e.rows(`(SELECT d, k, v FROM public.t EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= '2026-03-08')
			UNION ALL (SELECT d, k, v FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t)`); len(diff) > 0 {
			t.Errorf("%s: the target differs from the query's rows: %v", when, diff)
		}
	}
	quietThenLate(t, e, f, same)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
		t.Errorf("nothing changed after the late row's refresh: %s %v %v", res.Action, res.Reasons, res.Partitions)
	}
	e.exec(`UPDATE public.t SET v = -1 WHERE d = '2026-03-10'`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionRecomputeWindow || !slices.Contains(res.Reasons, compile.ReasonExternalChange) {
		t.Errorf("after DML on the target: %s %v %v; want the window recomputed", res.Action, res.Reasons, res.Partitions)
	}
	same("after DML on the target")
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
		t.Errorf("nothing changed after the target was restored: %s %v %v", res.Action, res.Reasons, res.Partitions)
	}
}

// On Citus too, the SQL a plan shows is the SQL rwc apply sends: over a
// distributed fact and a distributed target, after the target's rows
// moved to the shards, with nothing changed, and after a late row (the
// incremental write without RETURNING).
func TestCitusPlanIsWhatApplySends(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	e := citusToday(t)
	dir := writeSpecs(t, map[string]string{"p.yaml": dailySpec})
	if code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir); code != 0 {
		t.Fatalf("rwc apply: exit %d:\n%s", code, out)
	}
	e.exec(`SELECT create_distributed_table('public.t', 'k', colocate_with => 'ev')`)
	planExplainApply(t, e, dir)
	planExplainApply(t, e, dir)
	e.exec(`INSERT INTO ev VALUES (current_date - 1, 'c', 7)`)
	planExplainApply(t, e, dir)
}

// distribution: makes rwc create the target as a Citus table, co-located
// with its fact, or as a reference table; it then refreshes incrementally.
func TestCitusDistributionKey(t *testing.T) {
	t.Parallel()
	for name, key := range map[string]string{
		"co-located": "    distribution: {by: k, colocate_with: ev}\n",
		"reference":  "    distribution: reference\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newCitusEnv(t)
			e.seedDaily()
			e.exec(`SELECT create_distributed_table('ev', 'k')`)
			f := flow(t, map[string]string{"p.yaml": strings.Replace(dailySpec, "    query: |", key+"    query: |", 1)}, "t")
			refresh(t, e.runner(now0), reqWindow(f))
			want := "h k"
			if name == "reference" {
				want = "n "
			}
			if got := e.value(`SELECT partmethod::text || ' ' || coalesce(column_to_column_name(logicalrelid, partkey), '') FROM pg_dist_partition WHERE logicalrelid = 'public.t'::regclass`); got != want {
				t.Errorf("the target's distribution: %q, want %q", got, want)
			}
			if name == "co-located" && e.value(`SELECT (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'public.t'::regclass) = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'ev'::regclass)`) != "true" {
				t.Error("the target is not co-located with ev")
			}
			if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
				t.Errorf("nothing changed: %s %v %v", res.Action, res.Reasons, res.Partitions)
			}
			e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 7)`)
			if res := refresh(t, e.runner(now0), reqWindow(f)); !slices.Equal(res.Partitions, []string{"2026-03-09"}) {
				t.Errorf("after a late row: %s %v %v", res.Action, res.Reasons, res.Partitions)
			}
			if n := e.count(`SELECT count(*) FROM (SELECT d, k, v FROM public.t EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= '2026-03-08') x`); n != 0 {
				t.Errorf("%d target rows the query does not yield", n)
			}
		})
	}
}

// Citus's alter_distributed_table (here a new shard count) builds the
// target anew under its name, with a new table id: rwc adopts it when the
// old table is gone and the new one holds the rows rwc left in the window,
// and recomputes the window (the rows were rewritten); one that holds other
// rows is refused, saying so, and nothing changes.
func TestCitusAdoptsAlteredTarget(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.seedDaily()
	e.exec(`SELECT create_distributed_table('ev', 'k')`)
	spec := strings.Replace(dailySpec, "    query: |", "    distribution: {by: k, colocate_with: ev}\n    query: |", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	before := e.oidOf("public.t")
	e.exec(`SELECT alter_distributed_table('public.t', shard_count => 4, colocate_with => 'none')`)
	now := e.oidOf("public.t")
	if now == before {
		t.Fatal("alter_distributed_table kept the table id: nothing to adopt")
	}
	if rep := stateReport(t, e, "check", 2); !hasFinding(rep, "target_recreated", "flow t") || hasFinding(rep, "target_replaced", "flow t") {
		t.Errorf("rwc state check after alter_distributed_table: %+v", rep)
	}
	// The spec asks to co-locate with ev: say it no longer does.
	spec = strings.Replace(spec, "{by: k, colocate_with: ev}", "{by: k}", 1)
	f = flow(t, map[string]string{"p.yaml": spec}, "t")
	if _, out := runRWC(t, e.dsn, "plan", writeSpecs(t, map[string]string{"p.yaml": spec})); !strings.Contains(out, "rwc apply adopts it if its window holds as many rows as rwc left there") {
		t.Errorf("rwc plan does not say that apply adopts the rebuilt target:\n%s", out)
	}
	e.exec(`DELETE FROM public.t WHERE d = '2026-03-10'`)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "where rwc left") || !strings.Contains(res.Err.Error(), "p.yaml:") {
		t.Fatalf("a recreated target without rwc's rows: %v", res.Err)
	}
	if n := e.count(`SELECT count(*) FROM public.t WHERE d = '2026-03-10'`); n != 0 {
		t.Errorf("the refused refresh wrote %d rows", n)
	}
	e.exec(`INSERT INTO public.t SELECT d, k, v FROM ev WHERE d = '2026-03-10'`)
	res = refresh(t, e.runner(now0), reqWindow(f))
	if res.Action != compile.ActionRecomputeWindow {
		t.Errorf("the first refresh after adoption: %s %v; want the window recomputed", res.Action, res.Reasons)
	}
	if got := e.value(`SELECT target_oid::text FROM rwc.flows WHERE flow = 't'`); got != now {
		t.Errorf("rwc.flows records table id %s, want %s", got, now)
	}
	if n := e.count(`SELECT count(*) FROM ((SELECT d, k, v FROM public.t EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= '2026-03-08')
		UNION ALL (SELECT d, k, v FROM ev WHERE d >= '2026-03-08' EXCEPT ALL SELECT d, k, v FROM public.t)) x`); n != 0 {
		t.Errorf("%d rows differ from the query's", n)
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 {
		t.Errorf("nothing changed since: %s %v %v", res.Action, res.Reasons, res.Partitions)
	}
}

// A target that exists as a local table, or a database without Citus:
// distribution: is refused before anything changes, saying how.
func TestCitusDistributionRefused(t *testing.T) {
	t.Parallel()
	spec := strings.Replace(dailySpec, "    query: |", "    distribution: {by: k}\n    query: |", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	t.Run("no Citus", func(t *testing.T) {
		t.Parallel()
		e := newDailyEnv(t)
		res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
		if res.Err == nil || !strings.Contains(res.Err.Error(), "p.yaml:") || !strings.Contains(res.Err.Error(), "this database has no Citus") {
			t.Fatalf("refresh: %v", res.Err)
		}
		if e.value(`SELECT to_regclass('public.t') IS NULL`) != "true" {
			t.Error("the target was created")
		}
	})
	t.Run("local target", func(t *testing.T) {
		t.Parallel()
		e := newCitusEnv(t)
		e.seedDaily()
		refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
		res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
		if res.Err == nil || !strings.Contains(res.Err.Error(), "exists as a local table") || !strings.Contains(res.Err.Error(), "create_distributed_table") {
			t.Fatalf("refresh: %v", res.Err)
		}
	})
}

// The plan of a distributed target's creation is what apply sends, and
// with a primary key holding the distribution column.
func TestCitusPlanDistributionKey(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	e := citusToday(t)
	spec := strings.Replace(dailySpec, "    query: |", "    primary_key: [d, k]\n    distribution: {by: k, colocate_with: ev}\n    query: |", 1)
	dir := writeSpecs(t, map[string]string{"p.yaml": spec})
	planExplainApply(t, e, dir)
	if e.value(`SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'public.t'::regclass`) != "1" {
		t.Error("the target is not distributed")
	}
	planExplainApply(t, e, dir)
}

// The distribution column retyped in the spec is refused before anything
// changes, at the column's type, not with Citus's internal error.
func TestCitusDistributionColumnRetyped(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.exec(`CREATE TABLE ev (d date, k integer, v integer); INSERT INTO ev VALUES ('2026-03-09', 1, 1), ('2026-03-10', 2, 2)`)
	spec := strings.Replace(strings.Replace(dailySpec, "      k: text\n", "      k: integer\n", 1), "    query: |", "    distribution: {by: k}\n    query: |", 1)
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": spec}, "t")))
	retyped := strings.Replace(spec, "      k: integer\n", "      k: bigint\n", 1)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(flow(t, map[string]string{"p.yaml": retyped}, "t")))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "p.yaml:7:") || !strings.Contains(res.Err.Error(), "distribution column") || strings.Contains(res.Err.Error(), "XX000") {
		t.Fatalf("refresh: %v", res.Err)
	}
	if got := e.value(`SELECT atttypid::regtype::text FROM pg_attribute WHERE attrelid = 'public.t'::regclass AND attname = 'k'`); got != "integer" {
		t.Errorf("k is %s now", got)
	}
}

// Pointed at a worker's database, rwc plan and rwc apply say so and change
// nothing: the state and the flows' tables are on the coordinator.
func TestCitusWorkerRefused(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	e := newCitusEnv(t)
	worker := pgtest.CitusWorkerDSN(e.dsn)
	dir := writeSpecs(t, map[string]string{"p.yaml": dailySpec})
	for _, args := range [][]string{{"plan", dir}, {"apply", "--allow-dirty", dir}} {
		code, out := runRWC(t, worker, args...)
		if code == 0 || !strings.Contains(out, "Citus worker") || !strings.Contains(out, "coordinator") {
			t.Errorf("rwc %s on a worker: exit %d:\n%s", args[0], code, out)
		}
	}
	if n := e.count(`SELECT count(*) FROM run_command_on_workers($$SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rwc'$$) WHERE result <> '0'`); n != 0 {
		t.Errorf("rwc's state was created on %d worker(s)", n)
	}
}

// quietThenLate checks that two refreshes with nothing changed recompute
// and write nothing, and that one after a late row on 2026-03-09
// recomputes that day only, the target then the query's rows (same).
func quietThenLate(t *testing.T, e *env, f *flowT, same func(string)) {
	t.Helper()
	for i := range 2 {
		if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || len(res.Partitions) != 0 || res.RowsInserted != 0 {
			t.Errorf("refresh %d with nothing changed: %s %v %v, +%d rows; want nothing recomputed", i+1, res.Action, res.Reasons, res.Partitions, res.RowsInserted)
		}
	}
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 7)`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Action != compile.ActionIncremental || !slices.Equal(res.Partitions, []string{"2026-03-09"}) {
		t.Errorf("after a late row: %s %v %v; want 2026-03-09 recomputed", res.Action, res.Reasons, res.Partitions)
	}
	same("after a late row")
}

// citusToday is a Citus test database whose ev, distributed by k, holds
// rows for the five days to today: rwc apply runs on the machine's clock.
func citusToday(t *testing.T) *env {
	t.Helper()
	e := newCitusEnv(t)
	e.exec(`CREATE TABLE ev (d date, k text, v integer);
		INSERT INTO ev SELECT current_date - i, k, i FROM generate_series(0, 4) i, (VALUES ('a'), ('b')) k(k);
		SELECT create_distributed_table('ev', 'k')`)
	return e
}

// The orders example on Citus: its fact distributed, its dimension a
// reference table, its target distributed and co-located with the fact
// (distribution:), its expectations on. A first refresh, late rows,
// DML on the target, a dimension change, a backfill (--where) and a column
// added each leave the target equal to the query's rows.
func TestCitusOrdersExample(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.exec(`CREATE TABLE product_dim (product_id int PRIMARY KEY, product_name text NOT NULL);
		INSERT INTO product_dim SELECT i, 'product ' || i FROM generate_series(1, 200) i;
		CREATE TABLE orders_fct (order_id bigint PRIMARY KEY, date date NOT NULL, region text NOT NULL,
			product_id int NOT NULL, qty int NOT NULL, price numeric(10,2) NOT NULL);
		INSERT INTO orders_fct SELECT i, DATE '2026-03-10' - (i % 60), (ARRAY['emea','amer','apac','asia'])[1 + i % 4], 1 + (i * 7) % 200, 1 + i % 5, 5 + i % 90
			FROM generate_series(1, 12000) i;
		SELECT create_reference_table('product_dim'); SELECT create_distributed_table('orders_fct', 'order_id')`)
	spec := strings.Replace(readText(t, "../pipelines/orders.yaml"), "    primary_key: [date, order_id]\n",
		"    primary_key: [date, order_id]\n    distribution: {by: order_id, colocate_with: orders_fct}\n", 1)
	f := flow(t, map[string]string{"orders.yaml": spec}, "orders_enriched")
	same := func(when, cols string) {
		t.Helper()
		q := strings.ReplaceAll(`(SELECT COLS FROM analytics.orders_enriched WHERE date >= '2026-03-03' EXCEPT ALL
				SELECT COLS FROM (SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price FROM orders_fct o JOIN product_dim p ON o.product_id = p.product_id) q WHERE date >= '2026-03-03')
			UNION ALL (SELECT COLS FROM (SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price FROM orders_fct o JOIN product_dim p ON o.product_id = p.product_id) q WHERE date >= '2026-03-03'
				EXCEPT ALL SELECT COLS FROM analytics.orders_enriched WHERE date >= '2026-03-03')`, "COLS", cols)
		if diff := e.rows(q); len(diff) > 0 {
			t.Errorf("%s: the target differs from the query's rows (%d rows): %v", when, len(diff), diff[:min(len(diff), 3)])
		}
	}
	const cols = "order_id, date, region, product_name, qty, price"
	step := func(when, dml string, want compile.Action) {
		t.Helper()
		if dml != "" {
			e.exec(dml)
		}
		res := refresh(t, e.runner(now0), reqWindow(f))
		if res.Action != want {
			t.Errorf("%s: %s %v %v, want %s", when, res.Action, res.Reasons, res.Partitions, want)
		}
		same(when, cols)
	}
	step("first refresh", "", compile.ActionCreate)
	step("nothing changed", "", compile.ActionIncremental)
	step("late rows", `INSERT INTO orders_fct SELECT 100000 + i, DATE '2026-03-09', 'emea', 1, 1, 10 FROM generate_series(1, 50) i`, compile.ActionIncremental)
	step("DML on the target", `UPDATE analytics.orders_enriched SET qty = 99 WHERE date = '2026-03-08'`, compile.ActionRecomputeWindow)
	step("a dimension change", `UPDATE product_dim SET product_name = 'renamed' WHERE product_id = 7`, compile.ActionRecomputeWindow)
	res := refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "date >= date('2026-03-04') && date <= date('2026-03-05')")})
	if res.Err != nil || res.RowsInserted == 0 {
		t.Errorf("a backfill: %v, +%d", res.Err, res.RowsInserted)
	}
	same("after a backfill", cols)
	added := strings.Replace(spec, "      price: numeric(10,2)\n", "      price: numeric(10,2)\n      product_id: integer\n", 1)
	added = strings.Replace(added, "SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price\n", "SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price, o.product_id\n", 1)
	f = flow(t, map[string]string{"orders.yaml": added}, "orders_enriched")
	if res := refresh(t, e.runner(now0), reqWindow(f)); res.Err != nil {
		t.Fatalf("a column added: %v", res.Err)
	}
	same("after a column added", cols)
	if n := e.count(`SELECT count(*) FROM analytics.orders_enriched WHERE date >= '2026-03-03' AND product_id IS NULL`); n != 0 {
		t.Errorf("after a column added: %d rows of the window without it", n)
	}
	if e.value(`SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'analytics.orders_enriched'::regclass`) != "1" {
		t.Error("the target is not distributed")
	}
}

// On Citus a refresh paces the connections Citus's executor opens to the
// workers (citus.executor_slow_start_interval, 100ms in its transaction
// where the setting is Citus's default), and leaves a pace the database
// chose. The query reads the setting, so the target holds what the
// refresh's transaction ran with.
func TestCitusPacesConnections(t *testing.T) {
	t.Parallel()
	e := newCitusEnv(t)
	e.seedDaily()
	spec := strings.Replace(strings.Replace(dailySpec, "SELECT d, k, v FROM ev",
		"SELECT d, k, v, current_setting('citus.executor_slow_start_interval') AS pace FROM ev", 1),
		"      v: integer\n", "      v: integer\n      pace: text\n", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	pace := func(want string) {
		t.Helper()
		if got := e.value(`SELECT string_agg(DISTINCT pace, ', ') FROM public.t WHERE d >= '2026-03-08'`); got != want {
			t.Errorf("the refresh's transaction ran with citus.executor_slow_start_interval %s; want %s", got, want)
		}
	}
	refresh(t, e.runner(now0), reqWindow(f))
	pace("100ms")
	e.exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET citus.executor_slow_start_interval = %L', current_database(), '25ms'); END $$`)
	e.db.SetMaxIdleConns(0) // new sessions, which read the database's setting
	e.db.SetMaxIdleConns(2)
	refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Full})
	pace("25ms")
}

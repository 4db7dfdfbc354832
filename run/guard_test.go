package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// protectedSpec is dailySpec with reset_allowed: false.
var protectedSpec = strings.Replace(dailySpec, "    columns:", "    properties:\n      reset_allowed: false\n    columns:", 1)

// snapshotOf is the state tables that a refused refresh must leave as
// they were.
func (e *env) snapshotOf() [4][]string {
	return [4][]string{e.rows(`SELECT * FROM t`), e.rows(`SELECT * FROM rwc.flows`), e.rows(`SELECT * FROM rwc.events`),
		e.rows(`SELECT * FROM rwc.fingerprints`)}
}

func (e *env) unchanged(before [4][]string) {
	e.t.Helper()
	after := e.snapshotOf()
	for i, name := range []string{"target", "rwc.flows", "rwc.events", "rwc.fingerprints"} {
		pgtest.SameRows(e.t, name, after[i], before[i])
	}
}

// An override of a protected flow that would delete rows the query no
// longer yields (the sources dropped their days) is refused with the
// count, and changes nothing; with AllowLoss it runs and says what it lost.
func TestOverrideLossRefusedOnProtectedFlow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": protectedSpec}, "t")
	e.fillFromDay3(f)
	// The sources keep five days now: 2026-03-03..05 are gone from them.
	e.exec(`DELETE FROM ev WHERE d < '2026-03-06'`)
	before := e.snapshotOf()

	res := e.runner(now0).Refresh(context.Background(), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "true")})
	var refusal *run.Refusal
	if !errors.As(res.Err, &refusal) {
		t.Fatalf("override true after the sources dropped days: err = %v, want a refusal", res.Err)
	}
	for _, want := range []string{"reset_allowed: false", "would delete 6 rows", "--allow-loss", "nothing was changed"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("refusal %q does not say %q", res.Err, want)
		}
	}
	e.unchanged(before)

	// A range the sources still hold loses nothing and runs.
	res = refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-06')")})
	if res.RowsLost != 0 {
		t.Errorf("override of days the sources hold: %d rows lost, want 0", res.RowsLost)
	}

	res = refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "true"), AllowLoss: true})
	if res.RowsLost != 6 || res.RowsDeleted != 16 || res.RowsInserted != 10 {
		t.Errorf("allowed override: lost %d, -%d +%d; want 6 lost, -16 +10", res.RowsLost, res.RowsDeleted, res.RowsInserted)
	}
	if n := e.count(`SELECT count(*) FROM rwc.events WHERE (details->>'rows_lost')::int = 6`); n != 1 {
		t.Errorf("%d events record 6 rows lost, want 1", n)
	}
}

// What counts as lost is a multiset difference per partition value: a row
// whose values changed is replaced, not lost (a backfill of corrections
// runs); a duplicate DML row, or one whose partition value is NULL, that
// the query does not yield is lost.
func TestOverrideLossCountsPerPartitionValue(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": protectedSpec}, "t")
	e.fillFromDay3(f)
	r := e.runner(now0)

	// Upstream corrections all over history: every row changes, none is lost.
	e.exec(`UPDATE ev SET v = v + 1000, k = k || '2'`)
	res := refresh(t, r, run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-03')")})
	if res.RowsLost != 0 || e.count(`SELECT count(*) FROM t WHERE v > 1000`) != 16 {
		t.Fatalf("override of corrections: %d lost, %d rows corrected; want 0 lost, 16 corrected",
			res.RowsLost, e.count(`SELECT count(*) FROM t WHERE v > 1000`))
	}

	e.exec(`INSERT INTO t VALUES ('2026-03-04', 'dup', 0), (NULL, 'null', 0)`)
	before := e.snapshotOf()
	res = r.Refresh(context.Background(), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "true")})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "would delete 2 rows") {
		t.Fatalf("override over a duplicate and a NULL partition row: %v, want a refusal counting 2 rows", res.Err)
	}
	e.unchanged(before)
	// Without them in range, it runs.
	refresh(t, r, run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "d >= date('2026-03-05')")})
}

// A flow without the guard is not counted and not refused.
func TestOverrideLossUnprotectedFlow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	e.fillFromDay3(f)
	e.exec(`DELETE FROM ev WHERE d < '2026-03-06'`)
	res := refresh(t, e.runner(now0), run.Request{Flow: f, Mode: run.Override, Where: where(t, f, "true")})
	if res.RowsLost != 0 || res.RowsDeleted != 16 || res.RowsInserted != 10 {
		t.Errorf("override of an unprotected flow: lost %d, -%d +%d; want 0 counted, -16 +10", res.RowsLost, res.RowsDeleted, res.RowsInserted)
	}
}

// The guard is read from the deployed definition too: with false deployed,
// a spec edited to true (not deployed) still refuses a full refresh and a
// lossy override, saying that the deployed definition holds it.
func TestDeployedGuardWins(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	ctx := context.Background()
	deployed := project(t, map[string]string{"p.yaml": protectedSpec})
	r := e.runner(at(-5))
	if _, err := r.Apply(ctx, deployed, run.Deployment{By: "test", Specs: map[string]string{"pipelines/p.yaml": protectedSpec}}, nil); err != nil {
		t.Fatal(err)
	}
	refresh(t, e.runner(now0), reqWindow(deployed.Flow("t")))
	edited := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	if !edited.Table.ResetAllowed {
		t.Fatal("setup: the edited spec is protected")
	}
	e.exec(`DELETE FROM ev WHERE d < '2026-03-06'`)
	before := e.snapshotOf()

	res := e.runner(now0).Refresh(ctx, run.Request{Flow: edited, Mode: run.Full})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "in the deployed definition") {
		t.Fatalf("full refresh with false deployed, true in the spec: %v, want a refusal naming the deployed definition", res.Err)
	}
	res = e.runner(now0).Refresh(ctx, run.Request{Flow: edited, Mode: run.Override, Where: where(t, edited, "true")})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "would delete 6 rows") {
		t.Fatalf("lossy override with false deployed, true in the spec: %v, want a refusal", res.Err)
	}
	e.unchanged(before)

	// Deploying true relaxes it.
	if _, err := e.runner(now0).Apply(ctx, project(t, map[string]string{"p.yaml": dailySpec}),
		run.Deployment{By: "test", Specs: map[string]string{"pipelines/p.yaml": dailySpec}}, nil); err != nil {
		t.Fatal(err)
	}
	refresh(t, e.runner(now0), run.Request{Flow: edited, Mode: run.Full})
}

// A backfill file on a protected flow that would lose rows is refused
// before it starts (the ledger is untouched, so the file can still be
// edited to allow it); with AllowLoss it runs, each batch counting its own
// range.
func TestBackfillLossRefusedBeforeItStarts(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	ctx := context.Background()
	f := flow(t, map[string]string{"p.yaml": protectedSpec}, "t")
	e.fillFromDay3(f)
	e.exec(`DELETE FROM ev WHERE d < '2026-03-05'`)
	before := e.snapshotOf()
	job := &run.BackfillJob{Path: "pipelines/backfills/all.yaml", Content: "backfill: t\nwhere: 'true'\n", Flow: f,
		Where: where(t, f, "d >= date('2026-03-01')"), Reason: "recompute", BatchDays: 3}
	_, err := e.runner(now0).Backfill(ctx, job, nil)
	if err == nil || !strings.Contains(err.Error(), "would delete 4 rows") || !strings.Contains(err.Error(), "allow_loss: true") {
		t.Fatalf("lossy backfill: %v, want a refusal counting 4 rows and naming allow_loss", err)
	}
	e.unchanged(before)
	if n := e.count(`SELECT count(*) FROM rwc.backfills`); n != 0 {
		t.Errorf("the refused backfill left %d ledger entries", n)
	}

	job.AllowLoss = true
	var lost int64
	done, err := e.runner(now0).Backfill(ctx, job, func(p run.BatchProgress) { lost += p.Result.RowsLost })
	if err != nil || !done {
		t.Fatalf("allowed backfill: done %v, %v", done, err)
	}
	if lost != 4 {
		t.Errorf("the batches lost %d rows, want 4", lost)
	}
}

// A flow whose window calls rand() is RW211 in lint; the runner refuses it
// too, should it be handed one that skipped lint: its DELETE and INSERT
// would draw differently.
func TestRefreshRefusesARandomWindow(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	fsys := fstest.MapFS{"p.yaml": &fstest.MapFile{Data: []byte(strings.Replace(dailySpec, "-2)", "-2) && rand() < 2.0", 1))}}
	p, ds, err := compile.Load(fsys, "pipelines")
	if err != nil || !ds.HasErrors() {
		t.Fatalf("lint should report RW211: %v %v", err, ds)
	}
	f := p.Flow("t")
	if f == nil || f.Predicate == nil || f.Query == nil {
		t.Fatal("the flow did not compile past its lint error")
	}
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	var refused *run.Refusal
	if !errors.As(res.Err, &refused) {
		t.Fatalf("refresh of a rand() window: %v, want a refusal", res.Err)
	}
	if n := e.value(`SELECT count(*) FROM rwc.events`); n != "0" || e.value(`SELECT to_regclass('t') IS NULL`) != "true" {
		t.Errorf("the refusal changed something: %s events, target created: %s", n, e.value(`SELECT to_regclass('t') IS NOT NULL`))
	}
}

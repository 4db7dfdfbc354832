package run_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// badInputSpec has four flows: ok reads ev; divzero divides by v; missing
// reads visit (whose name is also the start of one of its column names);
// downstream reads divzero's target.
const badInputSpec = `pipeline: p
tables:
  ok:
    replace_where: d >= date('2026-03-08')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, v FROM ev
  divzero:
    replace_where: d >= date('2026-03-08')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, 1000 / v AS v
      FROM ev
  missing:
    replace_where: d >= date('2026-03-08')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT visit_date AS d, k, v
      FROM visit
  downstream:
    replace_where: d >= date('2026-03-08')
    columns:
      d: date
      n: bigint
    query: |
      SELECT d, count(*) AS n FROM divzero GROUP BY d
`

// lineCol finds the 1-based line and column of the first line of text
// containing marker, at marker.
func lineCol(t testing.TB, text, line, marker string) (int, int) {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, line) {
			return i + 1, strings.Index(l, marker) + 1
		}
	}
	t.Fatalf("no line %q", line)
	return 0, 0
}

// A query that fails at run time (division by zero on one row, a source
// table that is gone) fails its flow with PostgreSQL's error positioned in
// the spec file and rolls it back; the other flows are refreshed, the flows
// reading a failed flow's target are skipped, and Apply (and `rwc apply`)
// fail.
func TestBadInputAtRunTime(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TABLE visit AS SELECT d AS visit_date, k, v FROM ev`)
	p := project(t, map[string]string{"p.yaml": badInputSpec})
	ctx := context.Background()
	if _, err := e.runner(now0).Apply(ctx, p, run.Deployment{By: "test"}, nil); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	targets := `SELECT 'divzero', * FROM divzero UNION ALL SELECT 'missing', * FROM missing
		UNION ALL SELECT 'downstream', d, NULL, n::int FROM downstream`
	before := e.rows(targets)
	if len(before) != 15 {
		t.Fatalf("setup: %d target rows, want 15: %v", len(before), before)
	}

	e.exec(`UPDATE ev SET v = v + 1000; UPDATE ev SET v = 0 WHERE d = '2026-03-09' AND k = 'a'; DROP TABLE visit`)
	var seen []string
	results, err := e.runner(now0).Apply(ctx, p, run.Deployment{By: "test"}, func(r run.Result) { seen = append(seen, r.Flow) })
	if err == nil {
		t.Fatal("Apply succeeded with two failing flows")
	}
	if len(results) != 4 || len(seen) != 4 {
		t.Fatalf("%d results, %d callbacks; want 4", len(results), len(seen))
	}
	byFlow := map[string]run.Result{}
	for _, r := range results {
		byFlow[r.Flow] = r
	}

	if r := byFlow["ok"]; r.Err != nil || r.RowsInserted != 6 {
		t.Errorf("ok: %+v", r)
	}
	pgtest.SameRows(t, "ok's target", e.rows(`SELECT * FROM ok`), e.rows(`SELECT * FROM ev WHERE d >= '2026-03-08'`))

	for _, tc := range []struct {
		flow, code, message string
		line, col           int
	}{
		{"divzero", "22012", "division by zero", 0, 0},
		{"missing", "42P01", `relation "visit" does not exist`, 0, 0},
	} {
		r := byFlow[tc.flow]
		var qe *run.QueryError
		if !errors.As(r.Err, &qe) {
			t.Errorf("%s: err = %v (%T), want a *run.QueryError", tc.flow, r.Err, r.Err)
			continue
		}
		var pe *pq.Error
		if !errors.As(r.Err, &pe) || string(pe.Code) != tc.code || !strings.Contains(r.Err.Error(), tc.message) {
			t.Errorf("%s: err = %v, want SQLSTATE %s %q", tc.flow, r.Err, tc.code, tc.message)
		}
		if qe.Flow != tc.flow || qe.Pos.File != filepath.Join("pipelines", "p.yaml") {
			t.Errorf("%s: error at %s for flow %s", tc.flow, qe.Pos, qe.Flow)
		}
		if !strings.HasPrefix(r.Err.Error(), qe.Pos.String()+": ") {
			t.Errorf("%s: message does not start with its position: %v", tc.flow, r.Err)
		}
	}
	// The division has no name to point at: the error is at the query's
	// first character (the line after `query: |`).
	if q := p.Flow("divzero").Table.Query; posOf(byFlow["divzero"].Err) != fmt.Sprintf("%d:%d", q.AtOffset(0).Line, q.AtOffset(0).Column) || q.AtOffset(0).Line != q.Pos.Line+1 {
		t.Errorf("divzero: error at %s, want the query's first line after %s", posOf(byFlow["divzero"].Err), q.Pos)
	}
	// The missing table's name, not the column whose name starts with it.
	if l, c := lineCol(t, badInputSpec, "FROM visit", "visit"); posOf(byFlow["missing"].Err) != fmt.Sprintf("%d:%d", l, c) {
		t.Errorf("missing: error at %s, want line %d column %d (the table name)", posOf(byFlow["missing"].Err), l, c)
	}
	if r := byFlow["downstream"]; r.Err == nil || r.Action != "skipped" || !strings.Contains(r.Err.Error(), "divzero") {
		t.Errorf("downstream: action %q, err %v; want skipped because of divzero", r.Action, r.Err)
	}
	pgtest.SameRows(t, "failed and skipped flows' targets", e.rows(targets), before)
	if n := e.count(`SELECT count(*) FROM rwc.deployments`); n != 1 {
		t.Errorf("%d deployments recorded, want 1 (the failed apply records none)", n)
	}
	pgtest.SameRows(t, "failures logged", e.rows(`SELECT flow, kind FROM rwc.events WHERE id > 4`),
		[]string{"(divzero,refresh_failed)", "(missing,refresh_failed)", "(ok,planning_information)"})

	// Through the CLI: exit 1, the positions and the skip in its output.
	dir := writeSpecs(t, map[string]string{"p.yaml": badInputSpec})
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
	if code != 1 {
		t.Fatalf("rwc apply exited %d, want 1:\n%s", code, out)
	}
	ml, mc := lineCol(t, badInputSpec, "FROM visit", "visit")
	for _, want := range []string{
		fmt.Sprintf("p.yaml:%d:%d: flow missing: the query failed: relation \"visit\" does not exist", ml, mc),
		"division by zero", "skipped: it reads the target of divzero",
		// The end of the log lists each failure again, one per line.
		"2 of 4 flows failed and 1 were skipped; the deployment was not recorded:\n  - ",
		"\n  - flow downstream: skipped: it reads the target of divzero, whose refresh failed",
		fmt.Sprintf("p.yaml:%d:%d: flow missing: the query failed: relation \"visit\" does not exist (SQLSTATE 42P01); the refresh was rolled back and the target is unchanged\n  - flow downstream", ml, mc),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rwc apply output lacks %q:\n%s", want, out)
		}
	}
	pgtest.SameRows(t, "targets after rwc apply", e.rows(targets), before)
}

// posOf is "line:col" of a *run.QueryError.
func posOf(err error) string {
	var qe *run.QueryError
	if !errors.As(err, &qe) {
		return "(no position)"
	}
	return fmt.Sprintf("%d:%d", qe.Pos.Line, qe.Pos.Column)
}

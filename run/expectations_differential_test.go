package run_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// Generated checks, end to end: the failing rows a refresh counts for each
// check (the SQL compile renders, in PostgreSQL) are those CEL in Go fails
// on the rows the target holds afterwards, NULLs included.
func TestExpectationChecksAgreeWithGo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 2026))
	e := newEnv(t)
	e.exec(`CREATE TABLE src (d date, n integer, x double precision, s text, b boolean)`)
	var vals []string
	for i := 0; i < 400; i++ {
		vals = append(vals, fmt.Sprintf("(DATE '2026-03-01' + %d, %s, %s, %s, %s)", r.IntN(10),
			orNull(r, fmt.Sprint(r.IntN(21)-10)), orNull(r, fmt.Sprintf("%.2f", r.Float64()*4-2)),
			orNull(r, "'"+[]string{"a", "b", "ab", "", "B"}[r.IntN(5)]+"'"), orNull(r, []string{"true", "false"}[r.IntN(2)])))
	}
	e.exec(`INSERT INTO src VALUES ` + strings.Join(vals, ", "))
	var checks []string
	var expect strings.Builder
	for i := 0; i < 40; i++ {
		c := genCheck(r, 3)
		checks = append(checks, c)
		fmt.Fprintf(&expect, "      c%d:\n        check: %q\n        severity: warn\n", i, c)
	}
	spec := `pipeline: p
tables:
  t:
    replace_where: d >= date('2026-03-01')
    columns:
      d: date
      n: integer
      x: double precision
      s: text
      b: boolean
    expect:
` + expect.String() + `    query: |
      SELECT d, n, x, s, b FROM src
`
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	res := refresh(t, e.runner(now0), reqWindow(f))
	rows := targetRows(t, e.db)
	rc := predicate.Resolution{Now: now0}
	failedSome, passedSome := false, false
	for i, x := range res.Expectations {
		var goFails int64
		for _, row := range rows {
			fails, err := f.Expectations[i].Check.Violates(row, rc)
			if err != nil {
				t.Fatalf("%s: %v", checks[i], err)
			}
			if fails {
				goFails++
			}
		}
		if goFails != x.Failing {
			t.Errorf("check %s: PostgreSQL fails %d rows, Go %d", checks[i], x.Failing, goFails)
		}
		failedSome, passedSome = failedSome || x.Failing > 0, passedSome || x.Failing < int64(len(rows))
	}
	if !failedSome || !passedSome || len(res.Expectations) != len(checks) {
		t.Errorf("the generated checks are lopsided: %d results, some failing %v, some passing %v", len(res.Expectations), failedSome, passedSome)
	}
}

func orNull(r *rand.Rand, v string) string {
	if r.IntN(5) == 0 {
		return "NULL"
	}
	return v
}

// genCheck is a random check over the test's columns.
func genCheck(r *rand.Rand, depth int) string {
	if depth == 0 || r.IntN(3) == 0 {
		return []func() string{
			func() string { return fmt.Sprintf("n %s %d", pickOp(r), r.IntN(21)-10) },
			func() string { return fmt.Sprintf("x %s %.1f", pickOp(r), r.Float64()*4-2) },
			func() string { return fmt.Sprintf("n %s x", []string{"<", "<=", ">", ">="}[r.IntN(4)]) }, // CEL has no int == double
			func() string { return fmt.Sprintf("s %s '%s'", pickOp(r), []string{"a", "b", "", "B"}[r.IntN(4)]) },
			func() string { return "s in ['a', 'ab']" },
			func() string { return "s.startsWith('a')" },
			func() string { return "b" },
			func() string { return fmt.Sprintf("d %s date_add(current_date(), %d)", pickOp(r), -r.IntN(10)) },
		}[r.IntN(8)]()
	}
	switch r.IntN(3) {
	case 0:
		return "(" + genCheck(r, depth-1) + ") && (" + genCheck(r, depth-1) + ")"
	case 1:
		return "(" + genCheck(r, depth-1) + ") || (" + genCheck(r, depth-1) + ")"
	}
	return "!(" + genCheck(r, depth-1) + ")"
}

func pickOp(r *rand.Rand) string { return []string{"==", "!=", "<", "<=", ">", ">="}[r.IntN(6)] }

// targetRows reads public.t's rows as predicate values.
func targetRows(t *testing.T, db *sql.DB) []map[string]predicate.Value {
	t.Helper()
	rs, err := db.Query(`SELECT d, n, x, s, b FROM public.t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []map[string]predicate.Value
	for rs.Next() {
		var d sql.NullTime
		var n sql.NullInt64
		var x sql.NullFloat64
		var s sql.NullString
		var b sql.NullBool
		if err := rs.Scan(&d, &n, &x, &s, &b); err != nil {
			t.Fatal(err)
		}
		row := map[string]predicate.Value{"d": nil, "n": nil, "x": nil, "s": nil, "b": nil}
		if d.Valid {
			row["d"] = predicate.DateOf(d.Time)
		}
		if n.Valid {
			row["n"] = n.Int64
		}
		if x.Valid {
			row["x"] = x.Float64
		}
		if s.Valid {
			row["s"] = s.String
		}
		if b.Valid {
			row["b"] = b.Bool
		}
		out = append(out, row)
	}
	return out
}

package run_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// scanConds walks an EXPLAIN (FORMAT JSON) plan and returns, per relation
// scanned, the conditions its scan nodes apply.
func scanConds(node map[string]any, out map[string][]string) {
	if rel, ok := node["Relation Name"].(string); ok {
		for _, k := range []string{"Filter", "Index Cond", "Recheck Cond"} {
			if c, ok := node[k].(string); ok {
				out[rel] = append(out[rel], c)
			}
		}
		if _, ok := out[rel]; !ok {
			out[rel] = []string{}
		}
	}
	if kids, ok := node["Plans"].([]any); ok {
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok {
				scanConds(m, out)
			}
		}
	}
}

// For a join of two facts on the date, the window condition reaches both
// scans: PostgreSQL pushes the outer WHERE into the query but does not copy
// a range condition across f.date = g.date; rwc does. And the refresh's
// result is the same as without push-down.
func TestPredicatePushedToBothJoinedFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE f (date date, k int, a int); CREATE TABLE g (date date, k int, b int);
		INSERT INTO f SELECT DATE '2026-01-01' + i % 90, i % 7, i FROM generate_series(1, 3000) i;
		INSERT INTO g SELECT DATE '2026-01-01' + i % 90, i % 7, -i FROM generate_series(1, 3000) i;
		CREATE INDEX ON f (date); CREATE INDEX ON g (date); ANALYZE f; ANALYZE g`)
	for _, tc := range []struct{ name, query string }{
		{"join on", "SELECT f.date, f.k, f.a, g.b\n      FROM f JOIN g ON f.date = g.date AND f.k = g.k AND f.a = -g.b"},
		{"using", "SELECT date, k, a, b\n      FROM f JOIN g USING (date, k)\n      WHERE a = -b"},
		{"where", "SELECT g.date, f.k, f.a, g.b\n      FROM f, g\n      WHERE f.date = g.date AND f.k = g.k AND f.a = -g.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: date >= date_add(current_date(), -2)
    columns:
      date: date
      k: integer
      a: integer
      b: integer
    query: |
      ` + tc.query + "\n"}, "t")
			s := statements(t, fl, now0)
			if got := strings.Join(s.PushedTo, " "); !strings.Contains(got, "f") || !strings.Contains(got, "g") || len(s.PushedTo) != 2 {
				t.Errorf("pushed to %v, want f and g", s.PushedTo)
			}
			i := strings.Index(s.Insert, "\nSELECT ")
			if i < 0 {
				t.Fatalf("no SELECT in %s", s.Insert)
			}
			plan := e.value("EXPLAIN (FORMAT JSON) " + s.Insert[i+1:])
			var doc []map[string]any
			if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
				t.Fatalf("EXPLAIN: %v\n%s", err, plan)
			}
			conds := map[string][]string{}
			scanConds(doc[0]["Plan"].(map[string]any), conds)
			for _, rel := range []string{"f", "g"} {
				if !strings.Contains(strings.Join(conds[rel], " "), "2026-03-08") {
					t.Errorf("the scan of %s does not apply the window (conditions %q); plan:\n%s", rel, conds[rel], plan)
				}
			}

			refresh(t, e.runner(now0), reqWindow(fl))
			pgtest.SameRows(t, "target", e.rows(`SELECT * FROM t`), e.rows(`SELECT f.date, f.k, f.a, g.b FROM f JOIN g ON f.date = g.date AND f.k = g.k AND f.a = -g.b
				WHERE f.date >= '2026-03-08'`))
			e.exec(`DROP TABLE t; DELETE FROM rwc.flows; DELETE FROM rwc.events`)
		})
	}
}

package query

import (
	"reflect"
	"strings"
	"testing"
)

func TestPushable(t *testing.T) {
	cases := []struct {
		sql  string
		cols []string
		want map[string]map[string]string // table alias-or-name -> refs
	}{
		{"SELECT f.date, d.name FROM fact f JOIN dim d ON f.k = d.k", []string{"date"},
			map[string]map[string]string{"f": {"date": "f.date"}}},
		{"SELECT f.date, sum(f.n) AS n FROM fact f JOIN other o ON o.date = f.date GROUP BY f.date", []string{"date"},
			map[string]map[string]string{"f": {"date": "f.date"}, "o": {"date": "o.date"}}},
		{"SELECT date, region FROM fact", []string{"date", "region"},
			map[string]map[string]string{"fact": {"date": "fact.date", "region": "fact.region"}}},
		{"SELECT f.date, o.region FROM fact f JOIN other o ON o.date = f.date", []string{"date", "region"},
			map[string]map[string]string{"o": {"date": "o.date", "region": "o.region"}}},
		{"SELECT date FROM fact LIMIT 10", []string{"date"}, nil},
		{"SELECT f.date FROM fact f LEFT JOIN other o ON o.date = f.date", []string{"date"},
			map[string]map[string]string{"f": {"date": "f.date"}}},
	}
	for _, c := range cases {
		a, err := Analyze(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]map[string]string{}
		for _, p := range a.Pushable(c.cols) {
			name := p.Table.Alias
			if name == "" {
				name = p.Table.Name
			}
			got[name] = p.Refs
		}
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %v:\n got %v\nwant %v", c.sql, c.cols, got, c.want)
		}
	}
}

func TestWithConditions(t *testing.T) {
	got, err := WithConditions("SELECT f.date, d.name FROM fact f JOIN dim d ON f.k = d.k WHERE d.active",
		[]string{`(f.date >= DATE '2026-01-01')`, `(d.name <> 'x')`})
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT f.date, d.name FROM fact f JOIN dim d ON f.k = d.k WHERE d.active AND f.date >= '2026-01-01'::date AND d.name <> 'x'"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := WithConditions("SELECT 1", []string{"true) OR (true"}); err == nil {
		t.Error("a condition that is not one expression must be refused")
	}
}

// Conditions are added only when the deparsed query parses back to the tree
// rwc built: pg_query's deparser prints some quoted names bare and drops
// parentheses that matter, and the server would run another query.
func TestWithConditionsRefusesUnfaithfulDeparse(t *testing.T) {
	for _, q := range []string{
		`SELECT x, a.s FROM src a JOIN src b USING (x) AS "j UNION ALL SELECT v, 'p' FROM victim --"`,
		`SELECT x, a.s FROM src a JOIN src b USING (x) AS "J"`,
		`SELECT x, sum(y) OVER "w w" FROM src WINDOW "w w" AS (PARTITION BY x)`,
	} {
		if out, err := WithConditions(q, []string{"x >= 0"}); err == nil {
			t.Errorf("WithConditions(%q) = %q, want an error", q, out)
		}
	}
	out, err := WithConditions(`SELECT x, "Mixed Case" FROM src s WHERE s.y = 'it''s'`, []string{"x >= 0"})
	if err != nil || !strings.Contains(out, `"Mixed Case"`) {
		t.Errorf("a faithful deparse: %q, %v", out, err)
	}
}

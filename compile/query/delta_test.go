package query

import "testing"

func TestDelta(t *testing.T) {
	cases := []struct {
		sql, table string
		want       string // "": not linear in table
	}{
		{"SELECT f.date, d.name FROM fact f JOIN dim d ON f.k = d.k", "fact",
			"SELECT f.date, d.name FROM rwc_new f JOIN dim d ON f.k = d.k"},
		{"SELECT fact.date FROM public.fact WHERE fact.n > 0", "fact",
			"SELECT fact.date FROM rwc_new fact WHERE fact.n > 0"},
		// A column named with the table's schema: the transition table
		// has none.
		{"SELECT public.fact.date FROM public.fact", "fact", ""},
		{"SELECT f.date, d.name FROM fact f LEFT JOIN dim d ON f.k = d.k", "fact",
			"SELECT f.date, d.name FROM rwc_new f LEFT JOIN dim d ON f.k = d.k"},
		{"SELECT f.date, d.name FROM dim d RIGHT JOIN fact f ON f.k = d.k", "fact",
			"SELECT f.date, d.name FROM dim d RIGHT JOIN rwc_new f ON f.k = d.k"},
		{"SELECT f.date FROM fact f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.k = f.k)", "fact",
			"SELECT f.date FROM rwc_new f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.k = f.k)"},
		// The nullable side of an outer join, a FULL join: a new row there
		// changes rows of the other side.
		{"SELECT f.date FROM dim d LEFT JOIN fact f ON f.k = d.k", "fact", ""},
		{"SELECT f.date FROM fact f FULL JOIN dim d ON f.k = d.k", "fact", ""},
		// Rows combined.
		{"SELECT date, sum(n) AS n FROM fact GROUP BY date", "fact", ""},
		{"SELECT DISTINCT date FROM fact", "fact", ""},
		{"SELECT date, row_number() OVER (ORDER BY n) AS r FROM fact", "fact", ""},
		{"SELECT date FROM fact LIMIT 5", "fact", ""},
		{"SELECT date FROM fact UNION ALL SELECT date FROM other", "fact", ""},
		// Read twice, or inside a subquery.
		{"SELECT a.date FROM fact a JOIN fact b ON a.k = b.k", "fact", ""},
		{"SELECT date FROM (SELECT date FROM fact) s", "fact", ""},
		{"SELECT d.date FROM dim d WHERE d.k IN (SELECT k FROM fact)", "fact", ""},
	}
	for _, c := range cases {
		a, err := Analyze(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		var at TableRef
		for _, r := range a.References {
			if r.Name == c.table {
				at = r
			}
		}
		got, ok := a.Delta(at, "rwc_new")
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%s:\n got %q (%v)\nwant %q", c.sql, got, ok, c.want)
		}
	}
}

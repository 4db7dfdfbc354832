package query

import "testing"

// FuzzAnalyze checks that no input makes the analysis panic or report an
// offset outside the query: the caller indexes the query text with them.
func FuzzAnalyze(f *testing.F) {
	for _, tc := range analyzeCases {
		f.Add(tc.sql)
	}
	f.Add("SELECT a.x FROM a NATURAL JOIN b NATURAL LEFT JOIN c WHERE a.x = c.x")
	f.Add("SELECT x FROM (a JOIN b USING (x)) AS j(y) JOIN c USING (x)")
	f.Add("SELECT j.x FROM (a JOIN b USING (x) AS u) AS j, LATERAL (SELECT * FROM c WHERE c.x = j.x) l")
	f.Add("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT * FROM a JOIN b USING (x)")
	f.Add("SELECT (SELECT * FROM t), (t).*, f(x).y, x[1] FROM t, generate_series(1, 3) g(n) TABLESAMPLE bernoulli (1)")
	f.Add("SELECT x, lag(x) OVER (w ORDER BY y) FROM t WINDOW w AS (PARTITION BY x), v AS (w)")
	f.Fuzz(func(t *testing.T, sql string) {
		inRange := func(what string, off int) {
			if off < -1 || off > len(sql) {
				t.Fatalf("%s offset %d outside [-1, %d] for %q", what, off, len(sql), sql)
			}
		}
		if _, err := Fingerprint(sql); err != nil {
			if se, ok := err.(*SyntaxError); ok {
				inRange("fingerprint error", se.Offset)
			}
		}
		a, serr := Analyze(sql)
		if serr != nil {
			inRange("error", serr.Offset)
			return
		}
		if a.Star != nil {
			inRange("star", a.Star.Offset)
		}
		for _, tr := range a.Tables {
			inRange("table", tr.Offset)
		}
		names := []string{"date", "x", "?column?"}
		for _, c := range a.Columns {
			inRange("column", c.Offset)
			names = append(names, c.Name)
		}
		for _, n := range names {
			l := a.Lineage(n)
			for _, e := range l.Exposed {
				inRange("exposed", e.Table.Offset)
			}
			for _, tr := range l.NotExposed {
				inRange("not exposed", tr.Offset)
			}
		}
	})
}

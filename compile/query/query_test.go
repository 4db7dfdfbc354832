package query

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Each case states, in a compact text form, what rwc must learn from a
// query: output columns ("name kind", "unnamed" when PostgreSQL would call
// it ?column?), tables, and the lineage of some columns:
//
//	kind [star] [src=table.col ref=Ref] [group] [exposed=table:Ref,…] [not=table,…]
//
// or "notfound". Error cases give the text the offset must point at.
type analyzeCase struct {
	name    string
	sql     string
	cols    []string
	star    string // "" none, "*" or "q.*"
	tables  []string
	agg     bool
	setop   bool
	lineage map[string]string

	errAt     string // the error offset is the first occurrence of this text
	errMsg    string // substring of the message
	errHint   string // substring of the hint
	errReason Reason
}

var analyzeCases = []analyzeCase{
	{
		name:    "simple select",
		sql:     "SELECT date, amount FROM sales",
		cols:    []string{"date plain", "amount plain"},
		tables:  []string{"sales"},
		lineage: map[string]string{"date": "plain src=sales.date ref=sales.date exposed=sales:sales.date", "nope": "notfound"},
	},
	{
		name: "aliases and expressions",
		sql: `SELECT s.date AS day, s.amount * 2 AS double_amount, s.amount * 2, upper(s.name),
		             s.ts::date, CASE WHEN s.ok THEN 1 END, 1::int FROM sales s`,
		cols: []string{"day plain", "double_amount expression", "?column? expression unnamed", "upper expression",
			"ts expression", "case expression", "int4 expression"},
		tables: []string{"sales"},
		lineage: map[string]string{
			"day":  "plain src=sales.date ref=s.date exposed=sales:s.date",
			"ts":   "expression not=sales",
			"date": "notfound",
		},
	},
	{
		name: "PostgreSQL column names",
		sql: `SELECT count(*), max(x), coalesce(a, b), a IS NULL, (SELECT max(y) FROM t2), EXISTS (SELECT 1),
		             ARRAY[1], ROW(1, 2), current_date, nullif(a, b), greatest(a, b), x COLLATE "C", 'lit'::text,
		             -x, (SELECT z AS zz FROM t3), t.*, pg_catalog.lower(n) FROM t`,
		cols: []string{"count aggregate", "max aggregate", "coalesce expression", "?column? expression unnamed",
			"max expression", "exists expression", "array expression", "row expression", "current_date expression",
			"nullif expression", "greatest expression", "x expression", "text expression",
			"?column? expression unnamed", "zz expression", "lower expression"},
		star:   "t.*",
		tables: []string{"t2", "t3", "t"}, // by position in the text
		agg:    true,
	},
	{
		name:   "aggregate grouped by the column",
		sql:    "SELECT date, count(*) AS n, sum(amount) FROM sales GROUP BY date",
		cols:   []string{"date plain", "n aggregate", "sum aggregate"},
		tables: []string{"sales"},
		agg:    true,
		lineage: map[string]string{
			"date": "plain src=sales.date ref=sales.date group exposed=sales:sales.date",
			"n":    "aggregate not=sales",
		},
	},
	{
		name:    "aggregate not grouped by the column",
		sql:     "SELECT date, region, count(*) FROM sales GROUP BY region",
		cols:    []string{"date plain", "region plain", "count aggregate"},
		tables:  []string{"sales"},
		agg:     true,
		lineage: map[string]string{"date": "plain src=sales.date ref=sales.date not=sales", "region": "plain src=sales.region ref=sales.region group exposed=sales:sales.region"},
	},
	{
		name:    "GROUP BY position",
		sql:     "SELECT s.date, count(*) FROM sales s GROUP BY 1",
		cols:    []string{"date plain", "count aggregate"},
		tables:  []string{"sales"},
		agg:     true,
		lineage: map[string]string{"date": "plain src=sales.date ref=s.date group exposed=sales:s.date"},
	},
	{
		name:    "GROUP BY an expression's alias",
		sql:     "SELECT date_trunc('day', ts) AS day, count(*) FROM events GROUP BY day",
		cols:    []string{"day expression", "count aggregate"},
		tables:  []string{"events"},
		agg:     true,
		lineage: map[string]string{"day": "expression group not=events"},
	},
	{
		name:    "GROUP BY the same expression",
		sql:     "SELECT date_trunc('day', ts), count(*) FROM events GROUP BY date_trunc( 'day' , ts )",
		cols:    []string{"date_trunc expression", "count aggregate"},
		tables:  []string{"events"},
		agg:     true,
		lineage: map[string]string{"date_trunc": "expression group not=events"},
	},
	{
		name:   "GROUP BY ROLLUP does not keep the key in every set",
		sql:    "SELECT date, region, sum(x) FROM s GROUP BY ROLLUP (date, region)",
		cols:   []string{"date plain", "region plain", "sum aggregate"},
		tables: []string{"s"},
		agg:    true,
		lineage: map[string]string{
			"date": "plain src=s.date ref=s.date not=s",
		},
	},
	{
		name:    "GROUP BY a key plus ROLLUP",
		sql:     "SELECT date, region, sum(x) FROM s GROUP BY date, ROLLUP (region)",
		cols:    []string{"date plain", "region plain", "sum aggregate"},
		tables:  []string{"s"},
		agg:     true,
		lineage: map[string]string{"date": "plain src=s.date ref=s.date group exposed=s:s.date"},
	},
	{
		name:    "join ON equality",
		sql:     "SELECT f.date, d.label FROM facts f JOIN days d ON d.date = f.date AND d.open",
		cols:    []string{"date plain", "label plain"},
		tables:  []string{"facts", "days"},
		lineage: map[string]string{"date": "plain src=facts.date ref=f.date exposed=facts:f.date,days:d.date"},
	},
	{
		name:    "three-way chain",
		sql:     "SELECT a.date FROM a JOIN b ON a.date = b.date JOIN c ON b.date = c.date",
		cols:    []string{"date plain"},
		tables:  []string{"a", "b", "c"},
		lineage: map[string]string{"date": "plain src=a.date ref=a.date exposed=a:a.date,b:b.date,c:c.date"},
	},
	{
		name:    "USING",
		sql:     "SELECT date, f.amount FROM facts f JOIN rates r USING (date) JOIN days USING (date)",
		cols:    []string{"date plain", "amount plain"},
		tables:  []string{"facts", "rates", "days"},
		lineage: map[string]string{"date": "plain src=facts.date ref=f.date exposed=facts:f.date,rates:r.date,days:days.date"},
	},
	{
		name:    "WHERE equality",
		sql:     "SELECT f.date FROM facts f, days d WHERE f.date = d.date AND d.open",
		cols:    []string{"date plain"},
		tables:  []string{"facts", "days"},
		lineage: map[string]string{"date": "plain src=facts.date ref=f.date exposed=facts:f.date,days:d.date"},
	},
	{
		name:    "dimension joined on another key",
		sql:     "SELECT f.date, c.name FROM facts f JOIN customers c ON c.id = f.customer_id",
		cols:    []string{"date plain", "name plain"},
		tables:  []string{"facts", "customers"},
		lineage: map[string]string{"date": "plain src=facts.date ref=f.date exposed=facts:f.date not=customers"},
	},
	{
		name:   "LEFT JOIN does not expose the nullable side",
		sql:    "SELECT f.date, d.date AS ddate FROM facts f LEFT JOIN days d ON d.date = f.date",
		cols:   []string{"date plain", "ddate plain"},
		tables: []string{"facts", "days"},
		lineage: map[string]string{
			"date":  "plain src=facts.date ref=f.date exposed=facts:f.date not=days",
			"ddate": "plain src=days.date ref=d.date exposed=days:d.date not=facts",
		},
	},
	{
		name:   "LEFT and RIGHT JOIN USING take the preserved side",
		sql:    "SELECT date FROM facts f LEFT JOIN days d USING (date)",
		cols:   []string{"date plain"},
		tables: []string{"facts", "days"},
		lineage: map[string]string{
			"date": "plain src=facts.date ref=f.date exposed=facts:f.date not=days",
		},
	},
	{
		name:    "RIGHT JOIN USING",
		sql:     "SELECT date FROM facts f RIGHT JOIN days d USING (date)",
		cols:    []string{"date plain"},
		tables:  []string{"facts", "days"},
		lineage: map[string]string{"date": "plain src=days.date ref=d.date exposed=days:d.date not=facts"},
	},
	{
		name:    "FULL JOIN USING merges into no single column",
		sql:     "SELECT date FROM facts f FULL JOIN days d USING (date)",
		cols:    []string{"date plain"},
		tables:  []string{"facts", "days"},
		lineage: map[string]string{"date": "plain src=?.date ref=date not=facts,days"},
	},
	{
		name:    "unqualified column with several tables and nothing naming it",
		sql:     "SELECT date, name FROM facts, customers",
		cols:    []string{"date plain", "name plain"},
		tables:  []string{"facts", "customers"},
		lineage: map[string]string{"date": "plain src=?.date ref=date not=facts,customers"},
	},
	{
		name:    "unqualified column the query qualifies elsewhere",
		sql:     "SELECT date FROM facts f JOIN customers c ON c.id = f.cid WHERE f.date > '2020-01-01'",
		cols:    []string{"date plain"},
		tables:  []string{"facts", "customers"},
		lineage: map[string]string{"date": "plain src=facts.date ref=f.date exposed=facts:f.date not=customers"},
	},
	{
		name:   "CTE",
		sql:    "WITH daily AS (SELECT date, sum(amount) AS total FROM sales GROUP BY date) SELECT d.date, d.total FROM daily d",
		cols:   []string{"date plain", "total plain"},
		tables: []string{"sales"},
		lineage: map[string]string{
			"date":  "plain src=sales.date ref=d.date exposed=sales:d.date",
			"total": "aggregate not=sales",
		},
	},
	{
		name:    "CTE with a column list, joined",
		sql:     "WITH daily(day, total) AS (SELECT date, sum(amount) FROM sales GROUP BY 1) SELECT k.day, total FROM daily JOIN calendar k ON k.day = daily.day",
		cols:    []string{"day plain", "total plain"},
		tables:  []string{"sales", "calendar"},
		lineage: map[string]string{"day": "plain src=calendar.day ref=k.day exposed=sales:daily.day,calendar:k.day", "total": "aggregate not=sales,calendar"},
	},
	{
		name:    "CTE read twice is materialised",
		sql:     "WITH x AS (SELECT date FROM sales) SELECT a.date FROM x a JOIN x b ON a.date = b.date",
		cols:    []string{"date plain"},
		tables:  []string{"sales"},
		lineage: map[string]string{"date": "plain src=sales.date ref=a.date not=sales"},
	},
	{
		name:    "CTE name hides a table",
		sql:     "WITH sales AS (SELECT * FROM raw_sales) SELECT date FROM sales",
		cols:    []string{"date plain"},
		tables:  []string{"raw_sales"},
		lineage: map[string]string{"date": "plain star src=raw_sales.date ref=sales.date exposed=raw_sales:sales.date"},
	},
	{
		name:    "recursive CTE is not traced",
		sql:     "WITH RECURSIVE r(d) AS (SELECT min(date) FROM sales UNION ALL SELECT d + 1 FROM r WHERE d < current_date) SELECT d FROM r",
		cols:    []string{"d plain"},
		tables:  []string{"sales"},
		lineage: map[string]string{"d": "expression not=sales"},
	},
	{
		name:    "subquery",
		sql:     "SELECT s.date, s.n FROM (SELECT date, count(*) AS n FROM events GROUP BY date) s JOIN days d ON d.date = s.date",
		cols:    []string{"date plain", "n plain"},
		tables:  []string{"events", "days"},
		lineage: map[string]string{"date": "plain src=events.date ref=s.date exposed=events:s.date,days:d.date", "n": "aggregate not=events,days"},
	},
	{
		name:    "subquery with LIMIT",
		sql:     "SELECT s.date FROM (SELECT date FROM events ORDER BY date LIMIT 10) s",
		cols:    []string{"date plain"},
		tables:  []string{"events"},
		lineage: map[string]string{"date": "plain src=events.date ref=s.date not=events"},
	},
	{
		name:    "subquery output is an expression",
		sql:     "SELECT s.day FROM (SELECT ts::date AS day FROM events) s",
		cols:    []string{"day plain"},
		tables:  []string{"events"},
		lineage: map[string]string{"day": "expression not=events"},
	},
	{
		name:    "subquery join inside is not copied across",
		sql:     "SELECT s.date FROM (SELECT e.date FROM events e JOIN days d ON d.date = e.date) s",
		cols:    []string{"date plain"},
		tables:  []string{"events", "days"},
		lineage: map[string]string{"date": "plain src=events.date ref=s.date exposed=events:s.date not=days"},
	},
	{
		name:   "UNION",
		sql:    "SELECT date, amount FROM online UNION ALL SELECT day, amount FROM stores",
		cols:   []string{"date plain", "amount plain"},
		tables: []string{"online", "stores"},
		setop:  true,
		lineage: map[string]string{
			"date": "plain src=online.date ref=online.date not=online,stores",
		},
	},
	{
		name:    "UNION with an expression arm",
		sql:     "SELECT date FROM online UNION SELECT ts::date FROM stores",
		cols:    []string{"date plain"},
		tables:  []string{"online", "stores"},
		setop:   true,
		lineage: map[string]string{"date": "expression not=online,stores"},
	},
	{
		name:    "star",
		sql:     "SELECT * FROM events",
		star:    "*",
		tables:  []string{"events"},
		lineage: map[string]string{"date": "plain star src=events.date ref=events.date exposed=events:events.date"},
	},
	{
		name:    "qualified star with a join",
		sql:     "SELECT e.*, d.label FROM events e JOIN days d ON d.date = e.date",
		cols:    []string{"label plain"},
		star:    "e.*",
		tables:  []string{"events", "days"},
		lineage: map[string]string{"date": "plain star src=events.date ref=e.date exposed=events:e.date,days:d.date"},
	},
	{
		name:   "window partitioned by the column",
		sql:    "SELECT date, row_number() OVER (PARTITION BY date ORDER BY ts) AS rn, sum(x) OVER w AS s FROM events WINDOW w AS (PARTITION BY date)",
		cols:   []string{"date plain", "rn window", "s window"},
		tables: []string{"events"},
		lineage: map[string]string{
			"date": "plain src=events.date ref=events.date exposed=events:events.date",
			"rn":   "window not=events",
		},
	},
	{
		name:    "window across the column",
		sql:     "SELECT date, sum(x) OVER (ORDER BY date) AS running FROM events",
		cols:    []string{"date plain", "running window"},
		tables:  []string{"events"},
		lineage: map[string]string{"date": "plain src=events.date ref=events.date not=events"},
	},
	{
		name:    "DISTINCT ON another key",
		sql:     "SELECT DISTINCT ON (id) id, date FROM events ORDER BY id, ts DESC",
		cols:    []string{"id plain", "date plain"},
		tables:  []string{"events"},
		lineage: map[string]string{"date": "plain src=events.date ref=events.date not=events", "id": "plain src=events.id ref=events.id exposed=events:events.id"},
	},
	{
		name:    "self join, schemas, quoting",
		sql:     `SELECT "Order".date FROM shop."Order" JOIN shop."Order" "user" ON "user".date = "Order".date`,
		cols:    []string{"date plain"},
		tables:  []string{"shop.Order"},
		lineage: map[string]string{"date": `plain src=shop.Order.date ref="Order".date exposed=shop.Order:"Order".date,shop.Order:"user".date`},
	},
	{
		name:    "join alias hides the tables inside",
		sql:     "SELECT j.date FROM (facts f JOIN days d USING (date)) j JOIN x ON x.date = j.date",
		cols:    []string{"date plain"},
		tables:  []string{"facts", "days", "x"},
		lineage: map[string]string{"date": "plain src=facts.date ref=j.date exposed=facts:j.date,x:x.date not=days"},
	},
	{
		name:    "three-part column reference",
		sql:     "SELECT shop.orders.date FROM shop.orders",
		cols:    []string{"date plain"},
		tables:  []string{"shop.orders"},
		lineage: map[string]string{"date": "plain src=shop.orders.date ref=orders.date exposed=shop.orders:orders.date"},
	},
	{
		name: "tables everywhere",
		sql: `WITH c AS (SELECT id FROM public.customers)
		      SELECT o.date FROM sales.orders o
		      WHERE o.cid IN (SELECT id FROM c) AND EXISTS (SELECT 1 FROM blocked b WHERE b.id = o.cid)
		      UNION SELECT date FROM archive.orders FOR UPDATE OF orders`,
		cols:   []string{"date plain"},
		tables: []string{"public.customers", "sales.orders", "blocked", "archive.orders"},
		setop:  true,
	},
	{
		name:   "VALUES",
		sql:    "VALUES (1, 'a'), (2, 'b')",
		cols:   []string{"column1 expression", "column2 expression"},
		tables: nil,
	},
	{
		name:      "syntax error",
		sql:       "SELECT date, FROM sales",
		errAt:     "FROM",
		errMsg:    `syntax error at or near "FROM"`,
		errReason: ReasonSyntax,
	},
	{
		name:      "syntax error after non-ASCII text",
		sql:       "SELECT 'héllo wörld' AS grüße, FROM sales",
		errAt:     "FROM",
		errMsg:    `syntax error at or near "FROM"`,
		errReason: ReasonSyntax,
	},
	{
		name:      "syntax error at end of input",
		sql:       "SELECT date FROM",
		errAt:     "\x00", // end of the text
		errMsg:    "syntax error at end of input",
		errReason: ReasonSyntax,
	},
	{
		name:      "GROUP BY ALL",
		sql:       "SELECT date, count(*) FROM sales GROUP BY all ORDER BY 1",
		errAt:     "all",
		errHint:   "PostgreSQL has no GROUP BY ALL; list the grouping columns: GROUP BY a, b",
		errReason: ReasonSyntax,
	},
	{
		name:      "error before GROUP BY ALL gets no hint",
		sql:       "SELECT date, FROM sales GROUP BY ALL",
		errAt:     "FROM",
		errMsg:    `syntax error at or near "FROM"`,
		errReason: ReasonSyntax,
	},
	{
		name:      "not a SELECT",
		sql:       "  -- load\n  INSERT INTO t SELECT * FROM s",
		errAt:     "INSERT",
		errMsg:    "INSERT",
		errReason: ReasonNotSelect,
	},
	{
		name:      "multiple statements",
		sql:       "SELECT 1; /* more */ SELECT 2",
		errAt:     "SELECT 2",
		errReason: ReasonMultipleStatements,
	},
	{
		name:      "data-modifying CTE",
		sql:       "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",
		errAt:     "gone",
		errReason: ReasonNotSelect,
	},
	{
		name:      "SELECT INTO",
		sql:       "SELECT * INTO new_t FROM t",
		errAt:     "new_t",
		errReason: ReasonNotSelect,
	},
	{
		name:      "empty",
		sql:       "-- nothing here\n",
		errReason: ReasonEmpty,
	},
	{
		name:      "NUL byte",
		sql:       "SELECT 1\x00; DROP TABLE t",
		errAt:     "\x00",
		errHint:   "PostgreSQL query text cannot hold a NUL",
		errReason: ReasonSyntax,
	},
}

func TestAnalyze(t *testing.T) {
	for _, tc := range analyzeCases {
		t.Run(tc.name, func(t *testing.T) {
			a, serr := Analyze(tc.sql)
			if tc.errAt != "" || tc.errMsg != "" || tc.errHint != "" || tc.errReason != ReasonSyntax {
				checkError(t, tc, serr)
				return
			}
			if serr != nil {
				t.Fatalf("Analyze: %+v", *serr)
			}
			var cols []string
			for _, c := range a.Columns {
				s := c.Name + " " + c.Kind.String()
				if !c.Named {
					s += " unnamed"
				}
				cols = append(cols, s)
				if c.Offset < 0 || c.Offset >= len(tc.sql) {
					t.Errorf("column %s: offset %d out of range", c.Name, c.Offset)
				}
			}
			eq(t, "columns", cols, tc.cols)
			star := ""
			if a.Star != nil {
				star = "*"
				if a.Star.Qualifier != "" {
					star = a.Star.Qualifier + ".*"
				}
				if !strings.HasPrefix(tc.sql[a.Star.Offset:], star) {
					t.Errorf("star offset %d points at %q", a.Star.Offset, tc.sql[a.Star.Offset:])
				}
			}
			eq(t, "star", star, tc.star)
			var tables []string
			for _, tr := range a.Tables {
				tables = append(tables, tableName(tr))
			}
			eq(t, "tables", tables, tc.tables)
			eq(t, "aggregates", a.Aggregates, tc.agg)
			eq(t, "setop", a.SetOp, tc.setop)
			for col, want := range tc.lineage {
				eq(t, "lineage of "+col, renderLineage(a.Lineage(col)), want)
			}
		})
	}
}

func checkError(t *testing.T, tc analyzeCase, serr *SyntaxError) {
	t.Helper()
	if serr == nil {
		t.Fatalf("want an error, got none")
	}
	want := -1
	switch {
	case tc.errAt == "\x00" && !strings.Contains(tc.sql, "\x00"):
		want = len(tc.sql)
	case tc.errAt != "":
		want = strings.Index(tc.sql, tc.errAt)
	}
	if serr.Offset != want {
		t.Errorf("offset = %d, want %d (%q); error %+v", serr.Offset, want, tc.errAt, *serr)
	}
	if !strings.Contains(serr.Message, tc.errMsg) {
		t.Errorf("message %q does not contain %q", serr.Message, tc.errMsg)
	}
	if !strings.Contains(serr.Hint, tc.errHint) || (tc.errHint == "" && serr.Hint != "" && tc.errReason == ReasonSyntax) {
		t.Errorf("hint %q, want %q", serr.Hint, tc.errHint)
	}
	if serr.Reason != tc.errReason {
		t.Errorf("reason = %d, want %d", serr.Reason, tc.errReason)
	}
}

func tableName(t TableRef) string {
	if t.Schema != "" {
		return t.Schema + "." + t.Name
	}
	return t.Name
}

func renderLineage(l Lineage) string {
	if !l.Found {
		return "notfound"
	}
	parts := []string{l.Kind.String()}
	if l.FromStar {
		parts = append(parts, "star")
	}
	if l.Source != nil {
		tn := tableName(l.Source.Table)
		if tn == "" {
			tn = "?"
		}
		parts = append(parts, "src="+tn+"."+l.Source.Column, "ref="+l.Source.Ref)
	}
	if l.InGroupBy {
		parts = append(parts, "group")
	}
	if len(l.Exposed) > 0 {
		var es []string
		for _, e := range l.Exposed {
			es = append(es, tableName(e.Table)+":"+e.Ref)
		}
		parts = append(parts, "exposed="+strings.Join(es, ","))
	}
	if len(l.NotExposed) > 0 {
		var ns []string
		for _, n := range l.NotExposed {
			ns = append(ns, tableName(n))
		}
		parts = append(parts, "not="+strings.Join(ns, ","))
	}
	return strings.Join(parts, " ")
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

func TestLineageOffsets(t *testing.T) {
	// Offsets are bytes, after non-ASCII text too, so the caller can map
	// them into the YAML file.
	sql := "SELECT 'ü' AS u, f.date FROM facts f JOIN days d ON d.date = f.date"
	a, serr := Analyze(sql)
	if serr != nil {
		t.Fatal(serr)
	}
	if got := sql[a.Columns[1].Offset:]; !strings.HasPrefix(got, "f.date") {
		t.Errorf("column offset points at %q", got)
	}
	l := a.Lineage("date")
	for _, e := range l.Exposed {
		if !strings.HasPrefix(sql[e.Table.Offset:], e.Table.Name) {
			t.Errorf("table offset points at %q", sql[e.Table.Offset:])
		}
	}
}

// Big generated queries must stay fast: traces are memoised, so a chain of
// CTEs that each read the previous one twice is linear, not exponential.
func TestBigQueries(t *testing.T) {
	var b strings.Builder
	b.WriteString("WITH c0 AS (SELECT date FROM base)")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, ", c%d AS (SELECT x.date FROM c%d x JOIN c%d y ON x.date = y.date)", i, i-1, i-1)
	}
	b.WriteString(" SELECT date FROM c39")
	checkLineage(t, b.String(), "date", "plain src=base.date ref=c39.date not=base") // c1…c38 are read twice: materialised

	nested := strings.Repeat("SELECT date FROM (", 300) + "SELECT date FROM inner_t" + strings.Repeat(") s", 300)
	checkLineage(t, nested, "date", "plain src=inner_t.date ref=s.date exposed=inner_t:s.date")

	// A table under a long operator chain is still found.
	long := "SELECT " + strings.Repeat("a || ", 2000) + "(SELECT max(z) FROM deep) AS v FROM t"
	a, serr := Analyze(long)
	if serr != nil {
		t.Fatal(serr)
	}
	eq(t, "tables", len(a.Tables), 2)
}

func checkLineage(t *testing.T, sql, col, want string) {
	t.Helper()
	a, serr := Analyze(sql)
	if serr != nil {
		t.Fatalf("Analyze: %+v", *serr)
	}
	eq(t, "lineage of "+col, renderLineage(a.Lineage(col)), want)
}

func TestFingerprint(t *testing.T) {
	fp := func(s string) string {
		t.Helper()
		f, err := Fingerprint(s)
		if err != nil {
			t.Fatalf("Fingerprint(%q): %v", s, err)
		}
		return f
	}
	base := fp("SELECT date, sum(x) AS total FROM sales WHERE date > '2024-01-01' GROUP BY date")
	same := []string{
		"select date,\n  SUM(x) as total -- comment\nfrom SALES where DATE > '2024-01-01' /* c */ group by date",
		"SELECT date, sum(x) AS total FROM sales WHERE date > '2024-01-01' GROUP BY date;",
	}
	for _, s := range same {
		eq(t, "fingerprint of "+s, fp(s), base)
	}
	different := []string{
		"SELECT date, sum(x) AS total FROM sales WHERE date > '2025-01-01' GROUP BY date", // constant
		"SELECT date, sum(x) AS sum_x FROM sales WHERE date > '2024-01-01' GROUP BY date", // alias
		"SELECT sum(x) AS total, date FROM sales WHERE date > '2024-01-01' GROUP BY date", // order
		`SELECT date, sum(x) AS total FROM "SALES" WHERE date > '2024-01-01' GROUP BY date`,
	}
	for _, s := range different {
		if fp(s) == base {
			t.Errorf("fingerprint of %q should differ", s)
		}
	}
	_, err := Fingerprint("SELECT FROM FROM")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset < 0 {
		t.Errorf("want a *SyntaxError with an offset, got %v", err)
	}
}

func TestConcurrentLineage(t *testing.T) {
	a, serr := Analyze("SELECT f.date FROM facts f JOIN days d USING (date)")
	if serr != nil {
		t.Fatal(serr)
	}
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() { done <- renderLineage(a.Lineage("date")) }()
	}
	first := <-done
	for i := 1; i < 8; i++ {
		if got := <-done; got != first {
			t.Errorf("lineage differs between goroutines: %s vs %s", got, first)
		}
	}
}

func ExampleAnalysis_Lineage() {
	a, _ := Analyze(`SELECT f.date, c.name, sum(f.amount) AS amount
		FROM facts f JOIN days d ON d.date = f.date JOIN customers c ON c.id = f.customer_id
		GROUP BY 1, 2`)
	l := a.Lineage("date")
	fmt.Println(l.Kind, l.InGroupBy)
	for _, e := range l.Exposed {
		fmt.Println("exposed", e.Table.Name, e.Ref)
	}
	for _, t := range l.NotExposed {
		fmt.Println("scanned in full", t.Name)
	}
	// Output:
	// plain true
	// exposed facts f.date
	// exposed days d.date
	// scanned in full customers
}

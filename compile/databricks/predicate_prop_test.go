package databricks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// The property behind the construct table: for generated CEL predicates
// over every column type, export to Spark SQL and import back gives a
// predicate the containment prover shows equal to the original (each
// contains the other) and that evaluates alike on generated rows.

var propCols = []struct{ name, typ string }{
	{"c_int", "integer"}, {"c_big", "bigint"}, {"c_num", "numeric(12,3)"}, {"c_dbl", "double precision"},
	{"c_text", "text"}, {"c_vc", "varchar(20)"}, {"c_bool", "boolean"}, {"c_date", "date"},
	{"c_ts", "timestamp"}, {"c_tstz", "timestamptz"},
}

func propColumns(t *testing.T) ([]predicate.Column, map[string]pgtype.Type) {
	var cols []predicate.Column
	types := map[string]pgtype.Type{}
	for _, c := range propCols {
		ty, err := pgtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, predicate.Column{Name: c.name, Type: ty})
		types[c.name] = ty
	}
	return cols, types
}

type propGen struct{ r *rand.Rand }

func (g propGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

var propStrings = []string{"", "a", "B", "ab", "it's", `a\b`, `\`, "''", `"q"`, "x\ny", "tab\there", "é", "日本", "🙂", "%", "_", "a%b", "--", "/*", ";", "NULL"}

func (g propGen) str() string { return strconv.Quote(propStrings[g.r.IntN(len(propStrings))]) }

func (g propGen) intLit() string {
	return g.pick("0", "1", "-1", "7", "-30", "42", "2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808", strconv.Itoa(g.r.IntN(200)-100))
}

func (g propGen) dblLit() string {
	return g.pick("0.0", "0.1", "-2.5", "1e300", "5e-324", "123456.789", "-0.001", "2.0", "1.5")
}

func (g propGen) date() string {
	return fmt.Sprintf("date('%s')", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(60)-30).Format("2006-01-02"))
}

func (g propGen) dateTerm() string {
	switch g.r.IntN(5) {
	case 0:
		return g.date()
	case 1:
		return fmt.Sprintf("date_add(current_date(), %d)", g.r.IntN(21)-10)
	case 2:
		return fmt.Sprintf("date_sub(current_date(), %d)", g.r.IntN(10))
	case 3:
		return "current_date()"
	}
	return fmt.Sprintf("'%s'", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(60)-30).Format("2006-01-02"))
}

func (g propGen) ts() string {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.r.Int64N(int64(60 * 24 * time.Hour)))).Add(-30 * 24 * time.Hour)
	if g.r.IntN(2) == 0 {
		t = t.Truncate(time.Second)
	} else {
		t = t.Truncate(time.Microsecond)
	}
	return fmt.Sprintf("timestamp('%s')", t.Format(time.RFC3339Nano))
}

func (g propGen) atom() string {
	op := g.pick("==", "!=", "<", "<=", ">", ">=")
	switch g.r.IntN(14) {
	case 0:
		return g.pick("c_int", "c_big") + " " + op + " " + g.intLit()
	case 1:
		return g.pick("c_num", "c_dbl") + " " + g.pick("<", "<=", ">", ">=") + " " + g.pick(g.dblLit(), g.intLit())
	case 2:
		return g.pick("c_text", "c_vc") + " " + op + " " + g.str()
	case 3:
		return g.pick("c_text", "c_vc") + "." + g.pick("startsWith", "endsWith", "contains") + "(" + g.str() + ")"
	case 4:
		return g.pick("c_bool", "!c_bool", "c_bool == true", "c_bool != false")
	case 5, 6:
		return "c_date " + op + " " + g.dateTerm()
	case 7:
		return fmt.Sprintf("date_add(c_date, %d) %s %s", g.r.IntN(11)-5, op, g.date())
	case 8:
		return g.pick("c_ts", "c_tstz") + " " + op + " " + g.pick(g.ts(), "current_timestamp()")
	case 9:
		return "c_int in [" + g.intLit() + ", " + g.intLit() + "]"
	case 10:
		return "c_text in [" + g.str() + ", " + g.str() + "]"
	case 11:
		return "c_date in [" + g.date() + ", " + g.date() + "]"
	case 12:
		return "rand() < 0.5"
	}
	return g.pick("true", "false") + " " + g.pick("||", "&&") + " c_bool"
}

func (g propGen) expr(depth int) string {
	if depth == 0 || g.r.IntN(4) == 0 {
		return g.atom()
	}
	switch g.r.IntN(5) {
	case 0, 1:
		return "(" + g.expr(depth-1) + " && " + g.expr(depth-1) + ")"
	case 2, 3:
		return "(" + g.expr(depth-1) + " || " + g.expr(depth-1) + ")"
	}
	return "!(" + g.expr(depth-1) + ")"
}

func (g propGen) row() map[string]predicate.Value {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	row := map[string]predicate.Value{
		"c_int":  int64(g.r.IntN(200) - 100),
		"c_big":  []int64{math.MaxInt64, math.MinInt64, 0, 7, -30}[g.r.IntN(5)],
		"c_num":  []float64{0.1, -2.5, 123456.789, 2, -0.001, 1.5}[g.r.IntN(6)],
		"c_dbl":  []float64{0, 0.1, 1e300, 5e-324, -2.5, 2}[g.r.IntN(6)],
		"c_text": propStrings[g.r.IntN(len(propStrings))],
		"c_vc":   propStrings[g.r.IntN(len(propStrings))],
		"c_bool": g.r.IntN(2) == 0,
		"c_date": predicate.DateOf(base.AddDate(0, 0, g.r.IntN(60)-30)),
		"c_ts":   base.Add(time.Duration(g.r.Int64N(int64(60*24*time.Hour))) - 30*24*time.Hour).Truncate(time.Second),
		"c_tstz": base.Add(time.Duration(g.r.Int64N(int64(60*24*time.Hour))) - 30*24*time.Hour).Truncate(time.Microsecond),
	}
	for k := range row {
		if g.r.IntN(8) == 0 {
			row[k] = nil
		}
	}
	return row
}

func TestExportImportEquivalent(t *testing.T) {
	cols, types := propColumns(t)
	g := propGen{r: rand.New(rand.NewPCG(20, 26))}
	rc := predicate.Resolution{Now: time.Date(2026, 1, 10, 23, 30, 0, 0, time.UTC)}
	var rows []map[string]predicate.Value
	for range 120 {
		rows = append(rows, g.row())
	}
	pos := func(int) diag.Pos { return diag.Pos{File: "generated"} }
	checked, identical := 0, 0
	for i := 0; i < 1500; i++ {
		text := g.expr(3)
		p1, issues := predicate.Compile(text, cols)
		if len(issues) > 0 {
			continue // the generator's ill-typed combinations
		}
		spark, err := ExportPredicate(p1)
		if err != nil {
			t.Fatalf("export %s: %v", text, err)
		}
		cel, ds := importPredicate(lex(spark), types, pos)
		if len(ds) > 0 {
			t.Fatalf("CEL %s\nexported as %s\ndoes not import: %v", text, spark, ds)
		}
		p2, issues := predicate.Compile(cel, cols)
		if len(issues) > 0 {
			t.Fatalf("CEL %s\nexported as %s\nimported as %s, which does not compile: %s", text, spark, cel, issues[0].Message)
		}
		checked++
		if p1.Root.CEL() == p2.Root.CEL() {
			identical++
		} else if testing.Verbose() && checked-identical < 4 {
			t.Logf("not the same tree: %s\n  %s\n  %s", text, p1.Root.CEL(), p2.Root.CEL())
		}
		r1, err1 := p1.Resolve(rc)
		r2, err2 := p2.Resolve(rc)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: resolve: %v / %v", text, err1, err2)
		}
		if !predicate.Contains(r1, r2) || !predicate.Contains(r2, r1) {
			t.Fatalf("not proved equivalent:\nCEL      %s\nSpark    %s\nimported %s", text, spark, cel)
		}
		if p1.Determinism == predicate.NonDeterministic {
			continue
		}
		for _, row := range rows {
			a, errA := p1.Eval(row, rc)
			b, errB := p2.Eval(row, rc)
			if a != b || (errA == nil) != (errB == nil) {
				t.Fatalf("row %v: %s gives %v (%v), its round trip %s gives %v (%v)", row, text, a, errA, cel, b, errB)
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d of 1500 generated predicates compiled: the generator is off", checked)
	}
	t.Logf("%d predicates round-tripped, %d to the identical tree", checked, identical)
}

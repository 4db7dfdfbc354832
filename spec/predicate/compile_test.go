package predicate

import (
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

func testColumns(t testing.TB) []Column {
	var cols []Column
	for _, c := range [][2]string{
		{"id", "bigint"}, {"qty", "integer"}, {"price", "numeric(10,2)"}, {"ratio", "real"}, {"score", "double precision"},
		{"region", "text"}, {"code", "varchar(8)"}, {"active", "boolean"}, {"date", "date"},
		{"ts", "timestamptz"}, {"local_ts", "timestamp"}, {"payload", "jsonb"},
	} {
		ty, err := pgtype.Parse(c[1])
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, Column{Name: c[0], Type: ty})
	}
	return cols
}

var at = Resolution{Now: time.Date(2026, 11, 29, 23, 30, 0, 123456789, time.UTC)}

func TestCompileSQL(t *testing.T) {
	cases := []struct{ in, sql string }{
		{`date >= date_add(current_date(), -7)`, `("date" >= DATE '2026-11-22')`},
		{`date >= '2026-01-01' && date <= '2026-01-31'`, `(("date" >= DATE '2026-01-01') AND ("date" <= DATE '2026-01-31'))`},
		{`date_sub(date, 1) == date('2026-01-02')`, `(("date" + -1) = DATE '2026-01-02')`},
		{`region in ['asia', 'emea'] || !active`, `(("region" IN ('asia', 'emea')) OR (NOT "active"))`},
		{`region < 'm'`, `("region" COLLATE "C" < 'm')`},
		{`region.startsWith("O'Brien\\")`, `starts_with("region", E'O''Brien\\')`},
		{`code.endsWith('x')`, `(right("code", char_length('x')) = 'x')`},
		{`region.contains(code)`, `(strpos("region", "code") > 0)`},
		{`price > 10 && ratio < 0.5 && score != 2`, `((("price" > (10::numeric)) AND ("ratio" < float8 '0.5')) AND ("score" <> float8 '2'))`},
		{`qty >= -3 && qty < 2.5`, `(("qty" >= (-3)) AND ("qty" < float8 '2.5'))`},
		{`ts >= current_timestamp()`, `("ts" >= TIMESTAMPTZ '2026-11-29 23:30:00.123456+00')`},
		{`local_ts < timestamp('2026-01-01T10:00:00+02:00')`, `("local_ts" < TIMESTAMP '2026-01-01 08:00:00')`},
		{`local_ts < ts`, `(("local_ts" AT TIME ZONE 'UTC') < "ts")`},
		{`date in ['2026-01-01', date('2026-01-03')]`, `("date" IN (DATE '2026-01-01', DATE '2026-01-03'))`},
		{`rand() < 0.1`, `(random() < (0.1::numeric))`},
		{`active == true`, `("active" = TRUE)`},
	}
	cols := testColumns(t)
	for _, c := range cases {
		p, issues := Compile(c.in, cols)
		if len(issues) > 0 {
			t.Errorf("%s: %v", c.in, issues)
			continue
		}
		r, err := p.Resolve(at)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		got, err := r.SQL(nil)
		if err != nil || got != c.sql {
			t.Errorf("%s\n got %s (%v)\nwant %s", c.in, got, err, c.sql)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		in, code  string
		line, col int
		msg       string
	}{
		{`dat >= current_date()`, "RW202", 1, 1, `unknown column "dat"`},
		{`date >= `, "RW201", 1, 9, "Syntax error"},
		{`qty + 1 > 3`, "RW204", 1, 5, "operator + is not supported"},
		{`size(region) > 3`, "RW204", 1, 5, "function size() is not supported"},
		{`region.matches('a')`, "RW204", 1, 15, "function matches() is not supported"},
		{`date >= 'tomorrow'`, "RW205", 1, 9, "not an ISO date"},
		{`date >= date('2026-02-30')`, "RW205", 1, 14, "not an ISO date"},
		{`date == 3`, "RW203", 1, 6, "operator == cannot be applied to (date, int)"},
		{`region`, "RW207", 1, 1, "must be a bool"},
		{`payload == 'x'`, "RW206", 1, 1, "jsonb"},
		{`date_add(date, qty) > date`, "RW208", 1, 16, "integer literal"},
		{`region in []`, "RW210", 1, 11, "empty list"},
		{`region in [code]`, "RW208", 1, 12, "not a string literal"},
		{`ts > timestamp('2026-01-01')`, "RW205", 1, 16, "RFC 3339"},
		{"date >= current_date() &&\n  regoin == 'x'", "RW202", 2, 3, `did you mean "region"`},
		{``, "RW201", 1, 1, "empty"},
		{`[1,2].exists(x, x > 1)`, "RW204", 1, 13, "not supported"},
	}
	cols := testColumns(t)
	for _, c := range cases {
		_, issues := Compile(c.in, cols)
		if len(issues) == 0 {
			t.Errorf("%q: no issue", c.in)
			continue
		}
		is := issues[0]
		text := is.Message + " " + is.Hint
		if is.Code != c.code || is.At.Line != c.line || is.At.Column != c.col || !strings.Contains(text, c.msg) {
			t.Errorf("%q: got %s %d:%d %s; want %s %d:%d %q", c.in, is.Code, is.At.Line, is.At.Column, text, c.code, c.line, c.col, c.msg)
		}
	}
}

func TestDeterminism(t *testing.T) {
	cols := testColumns(t)
	for in, want := range map[string]Determinism{
		`date >= date('2026-01-01')`:            Immutable,
		`date >= date_add(current_date(), -7)`:  PerRefresh,
		`rand() < 0.5 && date > current_date()`: NonDeterministic,
	} {
		p, issues := Compile(in, cols)
		if len(issues) > 0 {
			t.Fatal(issues)
		}
		if p.Determinism != want {
			t.Errorf("%s: %v, want %v", in, p.Determinism, want)
		}
	}
}

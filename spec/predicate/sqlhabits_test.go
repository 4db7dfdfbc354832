package predicate

import (
	"fmt"
	"strings"
	"testing"
)

// TestSQLHabits: each SQL construct people write in a predicate is
// reported at its token, with the CEL spelling of what they wrote, and the
// whole predicate in CEL when the rewrite compiles.
func TestSQLHabits(t *testing.T) {
	cases := []struct {
		in   string
		want []string // "line:col message | hint", the hint as a prefix
	}{
		{`date BETWEEN '2020-01-01' AND '2024-12-31'`, []string{
			`1:6 BETWEEN is SQL, not CEL | in CEL: date >= '2020-01-01' && date <= '2024-12-31'`}},
		{`date NOT BETWEEN '2020-01-01' AND '2024-12-31'`, []string{
			`1:10 NOT BETWEEN is SQL, not CEL | in CEL: (date < '2020-01-01' || date > '2024-12-31')`}},
		{`date >= '2024-01-01' AND qty > 1`, []string{
			`1:22 AND is SQL; CEL writes && | in CEL: &&; the whole predicate in CEL: date >= '2024-01-01' && qty > 1`}},
		{`qty < 1 or qty > 9`, []string{
			`1:9 or is SQL; CEL writes || | in CEL: ||; the whole predicate in CEL: qty < 1 || qty > 9`}},
		{`NOT region = 'emea'`, []string{
			`1:1 NOT is SQL; CEL writes ! | in CEL: !(region == 'emea')`,
			`1:12 = is SQL; CEL compares with == | in CEL: region == 'emea'`}},
		{`region = 'emea'`, []string{`1:8 = is SQL; CEL compares with == | in CEL: region == 'emea'`}},
		{`region <> 'emea'`, []string{`1:8 <> is SQL; CEL writes != | in CEL: region != 'emea'`}},
		{`date >= DATE '2024-01-01'`, []string{
			`1:9 DATE '2024-01-01' is SQL's typed literal, not CEL | in CEL: date('2024-01-01'); the whole predicate in CEL: date >= date('2024-01-01')`}},
		{`ts >= '2024-01-01'`, []string{
			`1:7 a string compared with a timestamp column: '2024-01-01' is not a timestamp in CEL | in CEL: timestamp('2024-01-01T00:00:00Z'); the whole predicate in CEL: ts >= timestamp('2024-01-01T00:00:00Z')`}},
		{`date >= date_add('2024-01-01', 1)`, []string{
			`1:18 '2024-01-01' is a string, not a date, as the argument of date_add() | in CEL: date('2024-01-01'); the whole predicate in CEL: date >= date_add(date('2024-01-01'), 1)`}},
		{`region IN ('asia', 'emea')`, []string{
			`1:11 IN (...) is SQL, not CEL: CEL's lists are in brackets | in CEL: region in ['asia', 'emea']`}},
		{`region NOT IN ('asia')`, []string{`1:15 NOT IN (...) is SQL, not CEL | in CEL: !(region in ['asia'])`}},
		{`region IS NULL`, []string{`1:8 IS NULL is SQL; CEL predicates in rwc have no test for NULL | a row whose region is NULL is in no window`}},
		{`region IS NOT NULL`, []string{`1:8 IS NOT NULL is SQL; CEL predicates in rwc have no test for NULL | leave it out`}},
		{`date >= CURRENT_DATE - INTERVAL '7 days'`, []string{
			`1:9 CURRENT_DATE is SQL; CEL calls current_date() | in CEL: current_date(); the whole predicate in CEL: date >= date_add(current_date(), -7)`,
			`1:22 date arithmetic is SQL, not CEL | in CEL: date_add(current_date(), -7)`}},
		{`date >= current_date() - 3`, []string{`1:24 date arithmetic is SQL, not CEL | in CEL: date_add(current_date(), -3)`}},
		{`ts >= now()`, []string{`1:7 now() is SQL; CEL calls current_timestamp() | in CEL: current_timestamp()`}},
		{`region LIKE 'em%'`, []string{`1:8 LIKE is SQL, not CEL | in CEL: region.startsWith('em')`}},
		{`region = 'O''Brien'`, []string{
			`1:8 = is SQL; CEL compares with == | in CEL: region == "O'Brien"`,
			`1:13 '' inside a string is SQL's escaped quote, not CEL's | in CEL: "O'Brien"`}},
		// Positions across lines (a block scalar).
		{"date >= '2024-01-01'\n  AND region = 'emea'", []string{
			`2:3 AND is SQL; CEL writes && | in CEL: &&; the whole predicate in CEL: date >= '2024-01-01'`,
			`2:14 = is SQL; CEL compares with == | in CEL: region == 'emea'`}},
	}
	cols := testColumns(t)
	for _, c := range cases {
		p, issues := Compile(c.in, cols)
		if p != nil {
			t.Errorf("%s: compiled", c.in)
			continue
		}
		var got []string
		for _, is := range issues {
			if is.Code != "RW201" {
				t.Errorf("%s: code %s", c.in, is.Code)
			}
			got = append(got, fmt.Sprintf("%d:%d %s | %s", is.At.Line, is.At.Column, is.Message, is.Hint))
		}
		if len(got) != len(c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.in, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s:\n got %s\nwant %s…", c.in, got[i], c.want[i])
			}
		}
	}
}

// TestSQLHabitsOfferOnlyCEL: the whole predicate offered compiles, and
// means what the SQL meant.
func TestSQLHabitsOfferOnlyCEL(t *testing.T) {
	cols := testColumns(t)
	for _, in := range []string{
		`date BETWEEN '2020-01-01' AND '2024-12-31' OR region = 'emea'`,
		`NOT (region = 'a' OR region = 'b') AND date >= CURRENT_DATE - 7`,
		`region IN ('a', 'b') AND qty <> 3`,
	} {
		_, issues := Compile(in, cols)
		if len(issues) == 0 {
			t.Fatalf("%s compiled", in)
		}
		_, offer, ok := strings.Cut(issues[0].Hint, "the whole predicate in CEL: ")
		if !ok {
			t.Errorf("%s: no rewrite offered: %v", in, issues)
			continue
		}
		if _, iss := Compile(offer, cols); len(iss) > 0 {
			t.Errorf("%s: the offer %s does not compile: %v", in, offer, iss)
		}
	}
}

// TestSQLHabitsLeaveCELAlone: valid CEL and CEL mistakes that are not SQL
// keep their own messages.
func TestSQLHabitsLeaveCELAlone(t *testing.T) {
	cols := testColumns(t)
	for in, code := range map[string]string{
		`date >=`:             "Syntax error",
		`qty + 1 > 3`:         "operator + is not supported",
		`dat >= '2026-01-01'`: `unknown column "dat"`,
	} {
		_, issues := Compile(in, cols)
		if len(issues) == 0 || !strings.Contains(issues[0].Message, code) {
			t.Errorf("%s: %v, want %q", in, issues, code)
		}
	}
}

func FuzzSQLHabits(f *testing.F) {
	for _, s := range []string{`date BETWEEN 'a' AND`, `NOT`, `x IN (`, `'a''`, `- INTERVAL`, `LIKE '%'`, `a = = b`} {
		f.Add(s)
	}
	m := map[string]Column{}
	for _, c := range testColumns(f) {
		m[c.Name] = c
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 512 {
			return
		}
		_ = sqlHabits(s, m)
	})
}

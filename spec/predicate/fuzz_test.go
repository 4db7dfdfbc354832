package predicate

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// FuzzCompileTranslate feeds arbitrary text to Compile. Whatever compiles
// must resolve and render to SQL without error, deterministically, with
// user text only inside quoted literals; the CEL printer must round-trip it;
// and Eval must not panic.
//
//	go test -run XXX -fuzz FuzzCompileTranslate -fuzztime 60s ./spec/predicate/
func FuzzCompileTranslate(f *testing.F) {
	for _, s := range []string{
		`c_date >= date_add(current_date(), -7)`,
		`c_date >= '2026-01-01' && c_date <= date('2026-01-31')`,
		`date_sub(c_date, 1) == date('2026-01-02') || !c_bool`,
		`c_text in ['asia', "emea", r'x\y'] || c_vc.startsWith("O'Brien\\")`,
		`c_text < 'm' && c_vc.endsWith('x') && 'abc'.contains(c_text)`,
		`c_num > 10 && c_real < 0.5 && c_dbl != 2 && c_int >= -3 && c_big < 2.5`,
		`c_ts >= current_timestamp() || c_tstz < timestamp('2026-01-01T10:00:00.123456+02:00')`,
		`c_ts < c_tstz && c_small in [1, 2, 0x10]`,
		`rand() < 0.1 && c_date > current_date()`,
		`c_date > date_add(current_date(), 3000000)`,
		`c_date in [date_add(date('2026-01-01'), -1), '2026-02-01']`,
		`c_dbl in [1, 2.5e10, -0.0] && c_num in [0.001]`,
		`order > 3 && Upper == '\u00e9\U0001F642' && select`,
		`payload == 'x'`,
		`c_text.matches('a.*')`,
		`c_int + 1 > 2`,
		`[1, 2].exists(x, x > 1)`,
		`c_date == 3`,
		"c_text == 'a' &&\n  c_vc != \"\\x00\"",
		`!(!(!(c_bool)))`,
		`true`,
		`c_text == '\'; DROP TABLE t; --' || c_vc == "\"x\""`,
		// Regression: cel-go's parser gave up (error-recovery lookahead limit)
		// with no location, which became an issue at line -1, column 0.
		"t s<s z" + strings.Repeat("|", 488) + "a n[1,2,0]",
	} {
		f.Add(s)
	}
	cols := fuzzColumns(f)
	rc := Resolution{Now: time.Date(2026, 11, 29, 23, 30, 0, 123456789, time.UTC), Zone: time.FixedZone("", 14*3600)}
	sample := map[string]Value{
		"c_small": int64(3), "c_int": int64(-7), "c_big": int64(1 << 53), "c_num": 0.1, "c_real": 0.25, "c_dbl": 2.5,
		"c_text": "a'b\\c", "c_vc": "é", "c_bool": true, "c_date": mustDate("2026-11-30"),
		"c_ts": rc.Now.Truncate(time.Microsecond), "c_tstz": rc.Now.Add(-time.Hour), "order": int64(4), "Upper": "x", "select": false,
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, issues := Compile(text, cols)
		if p == nil {
			if len(issues) == 0 {
				t.Fatalf("%q: neither a predicate nor issues", text)
			}
			for _, is := range issues {
				if is.Code == "" || is.Message == "" || is.At.Line < 1 || is.At.Column < 1 {
					t.Fatalf("%q: malformed issue %+v", text, is)
				}
			}
			return
		}
		if len(issues) > 0 {
			t.Fatalf("%q: both a predicate and issues %v", text, issues)
		}
		rp, err := p.Resolve(rc)
		if err != nil {
			// The one legitimate failure: date_add(current_date(), n) leaving
			// years 1..9999, which only the resolution can tell.
			if strings.Contains(err.Error(), "internal") || !strings.Contains(err.Error(), "date out of range") {
				t.Fatalf("%q: Resolve: %v", text, err)
			}
			return
		}
		sql, err := rp.SQL(nil)
		if err != nil {
			t.Fatalf("%q: SQL: %v", text, err)
		}
		rp2, err := p.Resolve(rc)
		if err != nil {
			t.Fatalf("%q: second Resolve: %v", text, err)
		}
		if again, _ := rp2.SQL(nil); again != sql {
			t.Fatalf("%q: SQL not deterministic:\n%s\n%s", text, sql, again)
		}
		checkSQLTokens(t, text, sql, `"`)
		qualified, err := rp.SQL(func(name string) string { return `"src".` + pq.QuoteIdentifier(name) })
		if err != nil {
			t.Fatalf("%q: SQL with a ColumnRef: %v", text, err)
		}
		checkSQLTokens(t, text, qualified, `"src".`)

		// The printed form (what a refresh stores) compiles back to the same SQL.
		printed := rp.Root.CEL()
		q, issues := Compile(printed, cols)
		if len(issues) > 0 {
			t.Fatalf("%q: printed form %q does not compile: %v", text, printed, issues)
		}
		if back, err := q.SQL(nil); err != nil || back != sql {
			t.Fatalf("%q: printed form %q renders\n%s (%v)\nnot\n%s", text, printed, back, err, sql)
		}

		for _, row := range []map[string]Value{{}, sample} {
			a, errA := p.Eval(row, rc)
			b, errB := rp.Eval(row, rc)
			if p.Determinism == NonDeterministic {
				continue
			}
			if (errA == nil) != (errB == nil) || a != b {
				t.Fatalf("%q: Eval of the predicate (%v, %v) and of its resolved form %q (%v, %v) disagree on %v",
					text, a, errA, rp.Text, b, errB, row)
			}
		}
	})
}

func fuzzColumns(t testing.TB) []Column {
	cols := diffColumns(t)
	for _, c := range [][2]string{{"payload", "jsonb"}, {"order", "integer"}, {"Upper", "text"}, {"select", "boolean"}, {"tags", "text[]"}} {
		ty, err := pgtype.Parse(c[1])
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, Column{Name: c[0], Type: ty})
	}
	return cols
}

// sqlWords are the only bare words the renderer writes.
var sqlWords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IN": true, "COLLATE": true, "DATE": true, "TIMESTAMP": true,
	"TIMESTAMPTZ": true, "float8": true, "numeric": true, "TRUE": true, "FALSE": true, "NULL": true, "AT": true,
	"TIME": true, "ZONE": true, "starts_with": true, "right": true, "char_length": true, "strpos": true, "random": true,
}

var (
	sqlOperators = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true, "+": true, "-": true}
	sqlNumber    = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?`)
	sqlWord      = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*`)
)

// checkSQLTokens lexes sql the way PostgreSQL does (standard_conforming_strings
// on) and fails unless everything outside string literals is a known word,
// number, operator, punctuation, or a quoted identifier that names a column
// (after prefix, the ColumnRef's qualifier) or the "C" collation: user text
// can then only be inside literals.
func checkSQLTokens(t *testing.T, text, sql, prefix string) {
	t.Helper()
	fail := func(i int, why string) {
		t.Fatalf("%q: SQL %s at byte %d: %s", text, why, i, sql)
	}
	cols := map[string]bool{`"C"`: true}
	for _, c := range fuzzColumns(t) {
		q := pq.QuoteIdentifier(c.Name)
		if prefix != `"` {
			q = prefix + q
		}
		cols[q] = true
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ':
			i++
		case c == '(' || c == ')' || c == ',':
			i++
		case c == '\'' || (c == 'E' && i+1 < len(sql) && sql[i+1] == '\''):
			escapes := c == 'E'
			if escapes {
				i++
			}
			i++
			for {
				if i >= len(sql) {
					fail(i, "has an unterminated string literal")
				}
				if escapes && sql[i] == '\\' {
					i += 2
					continue
				}
				if sql[i] == '\'' {
					if i+1 < len(sql) && sql[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
		case c == ':' && strings.HasPrefix(sql[i:], "::"):
			i += 2
		case c == '"' || strings.HasPrefix(sql[i:], prefix):
			j := i
			if prefix != `"` && strings.HasPrefix(sql[i:], prefix) {
				j += len(prefix)
			}
			if j >= len(sql) || sql[j] != '"' {
				fail(i, "has a stray quote")
			}
			j++
			for {
				if j >= len(sql) {
					fail(i, "has an unterminated identifier")
				}
				if sql[j] == '"' {
					if j+1 < len(sql) && sql[j+1] == '"' {
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			if !cols[sql[i:j]] {
				fail(i, "names an unknown identifier "+sql[i:j])
			}
			i = j
		case strings.ContainsRune("+-*/<>=~!@#%^&|`?", rune(c)):
			j := i
			for j < len(sql) && strings.ContainsRune("+-*/<>=~!@#%^&|`?", rune(sql[j])) {
				j++
			}
			if !sqlOperators[sql[i:j]] {
				fail(i, "has operator "+sql[i:j])
			}
			i = j
		case c >= '0' && c <= '9':
			m := sqlNumber.FindString(sql[i:])
			i += len(m)
		default:
			m := sqlWord.FindString(sql[i:])
			if m == "" || !sqlWords[m] {
				fail(i, "has unexpected text")
			}
			i += len(m)
		}
	}
}

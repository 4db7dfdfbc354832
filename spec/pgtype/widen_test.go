package pgtype_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// widenCases: whether each retyping widens (keeps every value) and, for
// those that do not, whether the server shows a value lost or refused
// (false: kept as destructive because it depends on the session or
// changes how values print, not because these samples lose).
var widenCases = []struct {
	from, to string
	widens   bool
	lossy    bool
}{
	{"smallint", "integer", true, false},
	{"smallint", "bigint", true, false},
	{"integer", "bigint", true, false},
	{"integer", "numeric", true, false},
	{"integer", "numeric(10,0)", true, false},
	{"integer", "numeric(12,2)", true, false},
	{"bigint", "numeric(19,0)", true, false},
	{"smallint", "numeric(5,0)", true, false},
	{"numeric(10,2)", "numeric(12,2)", true, false},
	{"numeric(10,2)", "numeric(11,3)", true, false},
	{"numeric(10,2)", "numeric", true, false},
	{"numeric(5)", "numeric(6,1)", true, false},
	{"character varying(10)", "character varying(20)", true, false},
	{"character varying(10)", "character varying", true, false},
	{"character varying(10)", "text", true, false},
	{"character varying", "text", true, false},
	{"text", "character varying", true, false},
	{"timestamp(3) without time zone", "timestamp without time zone", true, false},
	{"timestamp(0) with time zone", "timestamp(3) with time zone", true, false},
	{"time(2) without time zone", "time without time zone", true, false},
	{"interval(1)", "interval", true, false},
	{"bit varying(4)", "bit varying(8)", true, false},
	{"integer[]", "bigint[]", true, false},
	{"character varying(5)[]", "text[]", true, false},

	{"bigint", "integer", false, true},
	{"integer", "smallint", false, true},
	{"bigint", "numeric(18,0)", false, true},
	{"integer", "numeric(12,3)", false, true},
	{"integer", "numeric(20,-1)", false, true},
	{"numeric(10,2)", "numeric(10,1)", false, true},
	{"numeric(10,2)", "numeric(11,4)", false, true},
	{"numeric", "numeric(10,2)", false, true},
	{"numeric(10,2)", "integer", false, true},
	{"bigint", "double precision", false, true},
	{"double precision", "real", false, true},
	{"character varying(20)", "character varying(10)", false, true},
	{"text", "character varying(10)", false, true},
	{"timestamp without time zone", "timestamp(3) without time zone", false, true},
	{"timestamp with time zone", "date", false, true},
	{"bit varying(8)", "bit varying(4)", false, true},
	{"integer", "text", false, false},
	{"timestamp without time zone", "timestamp with time zone", false, true},
	{"real", "double precision", true, false},
	{"bigint[]", "integer[]", false, true},
	{"integer[]", "bigint", false, false},
}

// samples are values at the edges of what a column of typ holds.
func samples(typ string) []string {
	elem := strings.TrimSuffix(typ, "[]")
	var vals []string
	switch {
	case elem == "smallint":
		vals = []string{"-32768", "32767"}
	case elem == "integer":
		vals = []string{"-2147483648", "2147483647"}
	case elem == "bigint":
		vals = []string{"-9223372036854775808", "9223372036854775807", "9007199254740993"}
	case elem == "numeric":
		vals = []string{"123456789012345678901234567890.123456789", "0.000000001", "NaN"}
	case strings.HasPrefix(elem, "numeric("):
		var p, s int
		if n, _ := fmt.Sscanf(elem, "numeric(%d,%d)", &p, &s); n < 2 {
			fmt.Sscanf(elem, "numeric(%d)", &p)
		}
		max := strings.Repeat("9", p-s)
		if s > 0 {
			max += "." + strings.Repeat("9", s)
		}
		vals = []string{max, "-" + max, "NaN"}
		if s > 0 {
			vals = append(vals, "0."+strings.Repeat("0", s-1)+"1")
		}
	case strings.HasPrefix(elem, "character varying("):
		var n int
		fmt.Sscanf(elem, "character varying(%d)", &n)
		vals = []string{strings.Repeat("x", n), strings.Repeat("x", n-1) + " "}
	case elem == "character varying" || elem == "text":
		vals = []string{strings.Repeat("x", 100), "trailing "}
	case strings.HasPrefix(elem, "timestamp"):
		vals = []string{"2026-03-29 02:30:00.123456", "294276-12-31 23:59:59.999999", "4713-01-01 00:00:00 BC", "infinity", "-infinity"}
	case strings.HasPrefix(elem, "time"):
		vals = []string{"23:59:59.999999", "00:00:00.5"}
	case strings.HasPrefix(elem, "interval"):
		vals = []string{"1 day 00:00:00.123456", "-178000000 years"}
	case elem == "real":
		vals = []string{"0.1", "3.4028235e38", "1e-45"}
	case elem == "double precision":
		vals = []string{"0.1", "1e300"}
	case strings.HasPrefix(elem, "bit varying("):
		var n int
		fmt.Sscanf(elem, "bit varying(%d)", &n)
		vals = []string{strings.Repeat("1", n), "1"}
	default:
		panic("no samples for " + typ)
	}
	if elem != typ {
		return []string{"ARRAY[" + sqlList(vals) + "]"}
	}
	return vals
}

func sqlList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

// TestWidensMatchesServer: what pgtype.Widens calls lossless, the server
// retypes without failing or changing a value at the edges of the old
// type (the values cast back compare equal); what it calls destructive
// (with lossy), the server loses or refuses at one of them. The session's
// TimeZone is Europe/Paris, where 2026-03-29 02:30 does not exist.
func TestWidensMatchesServer(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	if _, err := s.conn.ExecContext(ctx, "SET TimeZone = 'Europe/Paris'"); err != nil {
		t.Fatal(err)
	}
	for _, c := range widenCases {
		if got := pgtype.Widens(c.from, c.to); got != c.widens {
			t.Errorf("Widens(%q, %q) = %v, want %v", c.from, c.to, got, c.widens)
		}
		kept, err := retypeKeeps(ctx, s, c.from, c.to)
		switch {
		case c.widens && (err != nil || !kept):
			t.Errorf("%s → %s: Widens says lossless, but the server kept=%v, err=%v", c.from, c.to, kept, err)
		case !c.widens && c.lossy && err == nil && kept:
			t.Errorf("%s → %s: no sample lost or refused, so the case shows nothing", c.from, c.to)
		}
	}
}

// retypeKeeps retypes a column of from holding samples(from) to to, and
// says whether every value cast back equals the original.
func retypeKeeps(ctx context.Context, s *session, from, to string) (bool, error) {
	vals := samples(from)
	rows := make([]string, len(vals))
	for i, v := range vals {
		if strings.HasPrefix(v, "ARRAY[") {
			rows[i] = "(" + v + "::" + from + ")"
		} else {
			rows[i] = "('" + v + "'::" + from + ")"
		}
	}
	stmts := []string{
		"CREATE TEMP TABLE w (c " + from + ", orig " + from + ")",
		"INSERT INTO w (c) VALUES " + strings.Join(rows, ", "),
		"UPDATE w SET orig = c",
	}
	defer s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS w")
	for _, st := range stmts {
		if _, err := s.conn.ExecContext(ctx, st); err != nil {
			return false, fmt.Errorf("%s: %v", st, err)
		}
	}
	if _, err := s.conn.ExecContext(ctx, "ALTER TABLE w ALTER COLUMN c TYPE "+to+" USING c::"+to); err != nil {
		return false, err
	}
	var kept bool
	err := s.conn.QueryRowContext(ctx, "SELECT bool_and(c::"+from+" IS NOT DISTINCT FROM orig AND c::"+from+"::text = orig::text) FROM w").Scan(&kept)
	return kept, err
}

func TestWidensCanonical(t *testing.T) {
	// Every spelling reaches Widens as Parse writes it.
	for _, c := range [][2]string{{"int", "int8"}, {"varchar(10)", "varchar(12)"}, {"timestamptz(0)", "timestamptz(3)"}, {"decimal(10,2)", "numeric(12,2)"}, {"int4[]", "int8[]"}} {
		a, err1 := pgtype.Parse(c[0])
		b, err2 := pgtype.Parse(c[1])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !pgtype.Widens(a.Canonical, b.Canonical) {
			t.Errorf("Widens(%q, %q) = false", a.Canonical, b.Canonical)
		}
	}
}

func TestModifiers(t *testing.T) {
	for spelling, want := range map[string][]int{"numeric(10,2)": {10, 2}, "timestamptz(3)": {3}, "varchar(7)": {7}, "text": nil, "numeric": nil} {
		typ, err := pgtype.Parse(spelling)
		if err != nil {
			t.Fatal(err)
		}
		if got := typ.Modifiers(); !slices.Equal(got, want) {
			t.Errorf("%s (%s): modifiers %v, want %v", spelling, typ.Canonical, got, want)
		}
	}
}

// Package pgtype knows the PostgreSQL type names a spec may declare for a
// column, their canonical spelling, and the family a predicate sees them as.
package pgtype

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Family is how the predicate language sees a column type.
type Family int

const (
	Other       Family = iota // storable, but not usable in a predicate
	Int                       // smallint, integer, bigint
	Numeric                   // numeric/decimal: exact
	Float                     // real, double precision
	Text                      // text, varchar
	Bool                      // boolean
	Date                      // date
	Timestamp                 // timestamp without time zone, read as UTC
	TimestampTZ               // timestamp with time zone
)

var familyNames = [...]string{"other", "int", "numeric", "float", "text", "bool", "date", "timestamp", "timestamptz"}

func (f Family) String() string { return familyNames[f] }

// Type is a parsed column type.
type Type struct {
	Canonical string // e.g. "numeric(10,2)", "character varying(20)", "bigint[]"
	Base      string // canonical name without modifiers or array brackets
	Family    Family
	Array     bool
}

// aliases maps every accepted spelling to its canonical base name and family.
var aliases = map[string]struct {
	base   string
	family Family
	mods   int // how many type modifiers (n) or (p,s) are allowed
}{
	"smallint": {"smallint", Int, 0}, "int2": {"smallint", Int, 0},
	"integer": {"integer", Int, 0}, "int": {"integer", Int, 0}, "int4": {"integer", Int, 0},
	"bigint": {"bigint", Int, 0}, "int8": {"bigint", Int, 0},
	"numeric": {"numeric", Numeric, 2}, "decimal": {"numeric", Numeric, 2},
	"real": {"real", Float, 0}, "float4": {"real", Float, 0},
	"double precision": {"double precision", Float, 0}, "float8": {"double precision", Float, 0}, "float": {"double precision", Float, 0},
	"text":    {"text", Text, 0},
	"varchar": {"character varying", Text, 1}, "character varying": {"character varying", Text, 1},
	"char": {"character", Other, 1}, "character": {"character", Other, 1}, "bpchar": {"character", Other, 1},
	"boolean": {"boolean", Bool, 0}, "bool": {"boolean", Bool, 0},
	"date":      {"date", Date, 0},
	"timestamp": {"timestamp without time zone", Timestamp, 1}, "timestamp without time zone": {"timestamp without time zone", Timestamp, 1},
	"timestamptz": {"timestamp with time zone", TimestampTZ, 1}, "timestamp with time zone": {"timestamp with time zone", TimestampTZ, 1},
	"time": {"time without time zone", Other, 1}, "timetz": {"time with time zone", Other, 1},
	"interval": {"interval", Other, 1},
	"uuid":     {"uuid", Other, 0}, "json": {"json", Other, 0}, "jsonb": {"jsonb", Other, 0},
	"bytea": {"bytea", Other, 0}, "inet": {"inet", Other, 0}, "cidr": {"cidr", Other, 0},
	"macaddr": {"macaddr", Other, 0}, "money": {"money", Other, 0}, "xml": {"xml", Other, 0},
	"bit": {"bit", Other, 1}, "varbit": {"bit varying", Other, 1}, "bit varying": {"bit varying", Other, 1},
	"tsvector": {"tsvector", Other, 0}, "oid": {"oid", Other, 0},
}

var shape = regexp.MustCompile(`^([a-z][a-z0-9 ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?\s*((?:\[\s*\])*)$`)

// Parse accepts a PostgreSQL type name as a user writes it in `columns:`.
// It knows the built-in types a target table commonly uses; anything else is
// an error that lists what is accepted, so a typo never reaches CREATE TABLE.
func Parse(s string) (Type, error) {
	norm := strings.Join(strings.Fields(strings.ToLower(s)), " ")
	m := shape.FindStringSubmatch(norm)
	if m == nil {
		return Type{}, fmt.Errorf("%q is not a PostgreSQL type name", s)
	}
	a, ok := aliases[m[1]]
	if !ok {
		return Type{}, fmt.Errorf("unknown PostgreSQL type %q", m[1])
	}
	if modCount(m[2], m[3]) > a.mods {
		return Type{}, fmt.Errorf("type %q takes %s", a.base, modWords(a.mods))
	}
	mods, err := modifiers(m[1], a.base, m[2:4])
	if err != nil {
		return Type{}, err
	}
	t := Type{Base: a.base, Family: a.family, Canonical: a.base + mods, Array: m[4] != ""}
	if i := strings.Index(a.base, " with"); i > 0 && mods != "" {
		// PostgreSQL writes the precision inside the name: timestamp(3) with
		// time zone; "time without time zone(3)" is a syntax error.
		t.Canonical = a.base[:i] + mods + a.base[i:]
	}
	if t.Array {
		t.Canonical += "[]"
		t.Family = Other
	}
	return t, nil
}

// limit is PostgreSQL 15's range for one type modifier (see the server's
// anychar_typmod_check, numeric_typmod_in, anytime_typmod_check and
// bittypmodin); the differential test checks them against a real server.
type limit struct {
	what      string
	min, max  int64
	low, high string // hints for a value under min, over max; %s is the type
}

const timeHint = "PostgreSQL keeps at most microseconds and would silently store precision 6 instead; write %s(6), or %s without a precision, which is the same"

var (
	charLength = limit{"length", 1, 10485760, "a length is at least 1; write %s(1), or text for strings of any length", "for longer strings use text, which has no length limit"}
	bitLength  = limit{"length", 1, 83886080, "a length is at least 1; write %s(1)", "for longer bit strings use bit varying without a length"}
	timePrec   = limit{"precision", 0, 6, "", timeHint}
)

const scaleHint = "the scale is how many digits to keep after the decimal point, e.g. numeric(12,2)"

var limits = map[string][]limit{
	"character varying":           {charLength},
	"character":                   {charLength},
	"bit":                         {bitLength},
	"bit varying":                 {bitLength},
	"numeric":                     {{"precision", 1, 1000, "the precision is the number of digits, at least 1; or write numeric without a precision", "write numeric without a precision to store any number of digits"}, {"scale", -1000, 1000, scaleHint, scaleHint}},
	"timestamp without time zone": {timePrec},
	"timestamp with time zone":    {timePrec},
	"time without time zone":      {timePrec},
	"time with time zone":         {timePrec},
	"interval":                    {timePrec},
}

// RangeError is a type modifier PostgreSQL would refuse at CREATE TABLE, or
// (a time precision over 6) accept as a different type than the spec says.
type RangeError struct {
	Type     string // as the user spelled it: varchar, timestamptz
	What     string // length, precision or scale
	Got      string // as written, which may not fit an int64
	Min, Max int64
	hint     string
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %s must be between %d and %d, not %s", e.Type, e.What, e.Min, e.Max, e.Got)
}

// Hint says how to write the column instead.
func (e *RangeError) Hint() string {
	return strings.ReplaceAll(e.hint, "%s", e.Type)
}

// modifiers checks the written modifiers (empty strings when absent)
// against the type's limits and renders them as PostgreSQL prints them.
func modifiers(spelling, base string, written []string) (string, error) {
	var out []string
	for i, w := range written {
		if w == "" {
			break
		}
		if i >= len(limits[base]) {
			return "", fmt.Errorf("type %q takes %s", base, modWords(len(limits[base])))
		}
		l := limits[base][i]
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil || n < l.min || n > l.max {
			hint := l.high
			if err == nil && n < l.min {
				hint = l.low
			}
			return "", &RangeError{Type: spelling, What: l.what, Got: w, Min: l.min, Max: l.max, hint: hint}
		}
		out = append(out, strconv.FormatInt(n, 10))
	}
	if len(out) == 0 {
		return "", nil
	}
	return "(" + strings.Join(out, ",") + ")", nil
}

func modCount(first, second string) int {
	switch {
	case second != "":
		return 2
	case first != "":
		return 1
	}
	return 0
}

func modWords(n int) string {
	switch n {
	case 0:
		return "no modifier"
	case 1:
		return "at most one modifier, like (20)"
	}
	return "at most precision and scale, like (10,2)"
}

// Known lists the accepted spellings, for hints.
func Known() []string {
	return []string{"smallint", "integer", "bigint", "numeric(p,s)", "real", "double precision", "text",
		"varchar(n)", "char(n)", "boolean", "date", "timestamp", "timestamptz", "time", "interval",
		"uuid", "json", "jsonb", "bytea", "inet", "and arrays of these (text[])"}
}

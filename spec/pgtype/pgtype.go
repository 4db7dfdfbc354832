// Package pgtype knows the PostgreSQL type names a spec may declare for a
// column, their canonical spelling, and the family a predicate sees them as.
package pgtype

import (
	"fmt"
	"regexp"
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
	"interval": {"interval", Other, 0},
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
	nmods := 0
	if m[2] != "" {
		nmods = 1
	}
	if m[3] != "" {
		nmods = 2
	}
	if nmods > a.mods {
		return Type{}, fmt.Errorf("type %q takes %s", a.base, modWords(a.mods))
	}
	t := Type{Base: a.base, Family: a.family, Canonical: a.base, Array: m[4] != ""}
	switch nmods {
	case 1:
		t.Canonical = a.base + "(" + m[2] + ")"
	case 2:
		t.Canonical = a.base + "(" + m[2] + "," + m[3] + ")"
	}
	if strings.HasPrefix(a.base, "timestamp") && nmods == 1 {
		// PostgreSQL writes the precision inside the name: timestamp(3) with time zone.
		t.Canonical = "timestamp(" + m[2] + ")" + strings.TrimPrefix(a.base, "timestamp")
	}
	if t.Array {
		t.Canonical += "[]"
		t.Family = Other
	}
	return t, nil
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

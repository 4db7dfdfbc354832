package pgtype

import (
	"regexp"
	"strconv"
	"strings"
)

// Widens reports whether retyping a column from the canonical type from to
// the canonical type to (ALTER COLUMN ... TYPE to USING col::to) keeps
// every value the column can hold: the cast never fails and never rounds,
// and casting back gives each value again. So are smallint → integer →
// bigint; an integer type → numeric with room for its digits; numeric(p,s)
// → numeric with no fewer digits on either side of the point (or
// unconstrained); varchar(n) → varchar(m ≥ n), varchar or text; a time
// type's precision raised (or dropped: 6, microseconds); bit varying(n) →
// bit varying(m ≥ n); real → double precision (the same binary value,
// printed with double precision's digits); and arrays of such. Anything
// else counts as destructive: a narrowing rounds or fails, timestamp →
// timestamptz depends on the session's TimeZone (a local time in a DST gap
// moves), character(n) pads or trims; a few others keep their values
// (integer → text) but are not known here to.
func Widens(from, to string) bool {
	f, ok1 := parseCanonical(from)
	t, ok2 := parseCanonical(to)
	if !ok1 || !ok2 || f.array != t.array || from == to {
		return false
	}
	if f.base == t.base {
		return widerModifier(f, t)
	}
	if digits, ok := intDigits[f.base]; ok {
		switch {
		case t.base == "numeric":
			return len(t.mods) == 0 || scale(t) >= 0 && precision(t)-scale(t) >= digits
		case intDigits[t.base] > digits:
			return true
		}
		return false
	}
	switch {
	case f.base == "real" && t.base == "double precision":
		return true
	case f.base == "character varying" && t.base == "text":
		return true
	case f.base == "text" && t.base == "character varying":
		return len(t.mods) == 0
	}
	return false
}

// intDigits is how many decimal digits each integer type's values have at
// most.
var intDigits = map[string]int{"smallint": 5, "integer": 10, "bigint": 19}

// widerModifier: the same base type, with a modifier that holds at least
// what from's does.
func widerModifier(f, t canonical) bool {
	switch f.base {
	case "character varying", "bit varying":
		// No length: any length.
		return len(t.mods) == 0 || len(f.mods) > 0 && t.mods[0] >= f.mods[0]
	case "numeric":
		if len(t.mods) == 0 {
			return true
		}
		return len(f.mods) > 0 && scale(t) >= scale(f) && precision(t)-scale(t) >= precision(f)-scale(f)
	case "timestamp without time zone", "timestamp with time zone", "time without time zone", "time with time zone", "interval":
		return timePrecision(t) >= timePrecision(f)
	}
	return false
}

type canonical struct {
	base  string
	mods  []int
	array bool
}

// canonicalShape reads a canonical spelling (Type.Canonical): a base with
// its modifiers after it, or, for the time types, inside the name
// (timestamp(3) with time zone); [] for an array.
var canonicalShape = regexp.MustCompile(`^([a-z][a-z ]*?)(?:\(([-0-9,]+)\))?( with(?:out)? time zone)?((?:\[\])?)$`)

func parseCanonical(s string) (canonical, bool) {
	m := canonicalShape.FindStringSubmatch(s)
	if m == nil {
		return canonical{}, false
	}
	c := canonical{base: m[1] + m[3], array: m[4] != ""}
	if m[2] != "" {
		for _, part := range strings.Split(m[2], ",") {
			n, err := strconv.Atoi(part)
			if err != nil {
				return canonical{}, false
			}
			c.mods = append(c.mods, n)
		}
	}
	return c, true
}

func precision(c canonical) int { return c.mods[0] }

// scale is numeric(p,s)'s s; numeric(p) is numeric(p,0).
func scale(c canonical) int {
	if len(c.mods) > 1 {
		return c.mods[1]
	}
	return 0
}

// timePrecision is a time type's fractional digits: 6 without a modifier.
func timePrecision(c canonical) int {
	if len(c.mods) == 0 {
		return 6
	}
	return c.mods[0]
}

// Modifiers are t's type modifiers as its canonical spelling has them
// (numeric(10,2): 10, 2; timestamp(3) with time zone: 3); none for a
// type without.
func (t Type) Modifiers() []int {
	c, _ := parseCanonical(t.Canonical)
	return c.mods
}

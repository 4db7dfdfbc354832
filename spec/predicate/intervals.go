package predicate

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// bound is one end of an interval; a nil value is -∞ or +∞.
type bound struct {
	v    any
	incl bool
}

// interval is a contiguous range of one column's values.
type interval struct{ lo, hi bound }

// ivset is a sorted union of disjoint intervals: the values of one column
// that a conjunction of atoms allows. nil means nothing.
type ivset []interval

var everything = ivset{{}}

// cmpVal orders values of one kind. Numbers compare as numbers whatever
// their Go type; dates, timestamps, strings (bytes) and bools as such.
func cmpVal(a, b any) int {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp3(x < y, x > y)
		case float64:
			return cmp3(float64(x) < y, float64(x) > y)
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return cmp3(x < float64(y), x > float64(y))
		case float64:
			return cmp3(x < y, x > y)
		}
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		return cmp3(!x && y, x && !y)
	case Date:
		y := b.(Date)
		return cmp3(x < y, x > y)
	case time.Time:
		y := b.(time.Time)
		return cmp3(x.Before(y), x.After(y))
	}
	panic(fmt.Sprintf("cmpVal: %T vs %T", a, b))
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// discrete makes open bounds of integers and dates closed (x < 5 is
// x <= 4), so equal sets have equal intervals.
func discrete(b bound, up bool) bound {
	if b.v == nil || b.incl {
		return b
	}
	step := int64(-1)
	if up {
		step = 1
	}
	switch v := b.v.(type) {
	case int64:
		return bound{v + step, true}
	case Date:
		return bound{v + Date(step), true}
	}
	return b
}

func normalize(iv interval) interval {
	return interval{lo: discrete(iv.lo, true), hi: discrete(iv.hi, false)}
}

// empty reports whether no value lies in iv.
func (iv interval) empty() bool {
	if iv.lo.v == nil || iv.hi.v == nil {
		return false
	}
	c := cmpVal(iv.lo.v, iv.hi.v)
	return c > 0 || (c == 0 && !(iv.lo.incl && iv.hi.incl))
}

// loLess orders lower bounds: is a below b?
func loCmp(a, b bound) int {
	switch {
	case a.v == nil && b.v == nil:
		return 0
	case a.v == nil:
		return -1
	case b.v == nil:
		return 1
	}
	if c := cmpVal(a.v, b.v); c != 0 {
		return c
	}
	return cmp3(a.incl && !b.incl, !a.incl && b.incl)
}

func hiCmp(a, b bound) int {
	switch {
	case a.v == nil && b.v == nil:
		return 0
	case a.v == nil:
		return 1
	case b.v == nil:
		return -1
	}
	if c := cmpVal(a.v, b.v); c != 0 {
		return c
	}
	return cmp3(!a.incl && b.incl, a.incl && !b.incl)
}

func (s ivset) intersect(t ivset) ivset {
	var out ivset
	for _, a := range s {
		for _, b := range t {
			iv := interval{lo: a.lo, hi: a.hi}
			if loCmp(b.lo, iv.lo) > 0 {
				iv.lo = b.lo
			}
			if hiCmp(b.hi, iv.hi) < 0 {
				iv.hi = b.hi
			}
			if iv = normalize(iv); !iv.empty() {
				out = append(out, iv)
			}
		}
	}
	return out.canon()
}

func (s ivset) union(t ivset) ivset { return append(append(ivset{}, s...), t...).canon() }

// canon sorts and merges overlapping or touching intervals.
func (s ivset) canon() ivset {
	sort.Slice(s, func(i, j int) bool { return loCmp(s[i].lo, s[j].lo) < 0 })
	var out ivset
	for _, iv := range s {
		if n := len(out); n > 0 && touches(out[n-1], iv) {
			if hiCmp(iv.hi, out[n-1].hi) > 0 {
				out[n-1].hi = iv.hi
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

func touches(a, b interval) bool {
	if a.hi.v == nil || b.lo.v == nil {
		return true
	}
	c := cmpVal(a.hi.v, b.lo.v)
	if c > 0 || (c == 0 && (a.hi.incl || b.lo.incl)) {
		return true
	}
	// Adjacent integers or days: [1,4] and [5,9] make [1,9].
	switch h := a.hi.v.(type) {
	case int64:
		return a.hi.incl && b.lo.incl && h+1 == b.lo.v.(int64)
	case Date:
		return a.hi.incl && b.lo.incl && h+1 == b.lo.v.(Date)
	}
	return false
}

// complement is every value not in s.
func (s ivset) complement() ivset {
	if len(s) == 0 {
		return everything
	}
	var out ivset
	prev := bound{}
	for i, iv := range s {
		if i > 0 || iv.lo.v != nil {
			out = append(out, normalize(interval{lo: prev, hi: bound{iv.lo.v, !iv.lo.incl}}))
		}
		prev = bound{iv.hi.v, !iv.hi.incl}
		if iv.hi.v == nil {
			prev = bound{}
			return removeEmpty(out)
		}
	}
	out = append(out, normalize(interval{lo: prev}))
	return removeEmpty(out)
}

func removeEmpty(s ivset) ivset {
	var out ivset
	for _, iv := range s {
		if !iv.empty() {
			out = append(out, iv)
		}
	}
	return out
}

// subset reports whether every value of s is in t.
func (s ivset) subset(t ivset) bool {
	for _, a := range s {
		ok := false
		for _, b := range t {
			if loCmp(b.lo, a.lo) <= 0 && hiCmp(a.hi, b.hi) <= 0 {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (s ivset) minus(t ivset) ivset { return s.intersect(t.complement()) }

// String renders a set the way a plan shows it: [2026-10-30, 2026-11-21].
func (s ivset) String() string {
	if len(s) == 0 {
		return "∅"
	}
	parts := make([]string, len(s))
	for i, iv := range s {
		lo, hi := "(-∞", "+∞)"
		if iv.lo.v != nil {
			lo = map[bool]string{true: "[", false: "("}[iv.lo.incl] + fmtVal(iv.lo.v)
		}
		if iv.hi.v != nil {
			hi = fmtVal(iv.hi.v) + map[bool]string{true: "]", false: ")"}[iv.hi.incl]
		}
		if iv.lo.v != nil && iv.hi.v != nil && cmpVal(iv.lo.v, iv.hi.v) == 0 {
			parts[i] = "{" + fmtVal(iv.lo.v) + "}"
			continue
		}
		parts[i] = lo + ", " + hi
	}
	return strings.Join(parts, " ∪ ")
}

func fmtVal(v any) string {
	switch x := v.(type) {
	case Date:
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf("%v", v)
}

package predicate

import (
	"math"
)

// maxBoxes caps the DNF: past it, rwc does not try to prove anything and
// answers "not contained" (fall back, never guess).
const maxBoxes = 256

// box is one conjunction: per-column value sets plus atoms rwc cannot
// reason about (kept verbatim, so only an identical atom matches them).
type box struct {
	cols   map[string]ivset
	opaque map[string]bool
}

// Contains reports whether every row in inner's window is in outer's window:
// inner ⊆ outer, for resolved predicates (per-refresh functions inlined).
// It answers false whenever it cannot prove containment.
func Contains(outer, inner *Predicate) bool {
	bo, ok := boxes(outer.Root)
	if !ok {
		return false
	}
	bi, ok := boxes(inner.Root)
	if !ok {
		return false
	}
	for _, b := range bi {
		if !b.satisfiable() {
			continue
		}
		found := false
		for _, o := range bo {
			if b.within(o) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Change describes, on one column, what a new window adds to and drops from
// an old one, as value ranges. Exact reports whether both windows constrain
// that column alone (otherwise the ranges are only the column's projection).
type Change struct {
	Column string `json:"column"`
	Gained string `json:"gained,omitempty"`
	Lost   string `json:"lost,omitempty"`
	Exact  bool   `json:"exact"`
	// GainedDays and LostDays: on a date column, how many days Gained and
	// Lost hold, when they are bounded (0: none, or unbounded).
	GainedDays int64 `json:"gained_days,omitempty"`
	LostDays   int64 `json:"lost_days,omitempty"`
}

// Delta is the change from old's window to new's window on col. ok is false
// when either predicate is beyond what rwc can reason about.
func Delta(old, new *Predicate, col string) (Change, bool) {
	so, exo, ok := projection(old.Root, col)
	if !ok {
		return Change{}, false
	}
	sn, exn, ok := projection(new.Root, col)
	if !ok {
		return Change{}, false
	}
	ch := Change{Column: col, Exact: exo && exn}
	if g := sn.minus(so); len(g) > 0 {
		ch.Gained, ch.GainedDays = "+"+g.String(), g.days()
	}
	if l := so.minus(sn); len(l) > 0 {
		ch.Lost, ch.LostDays = "-"+l.String(), l.days()
	}
	return ch, true
}

// days counts the dates in s: 0 when s is not of dates or not bounded.
func (s ivset) days() int64 {
	var n int64
	for _, iv := range s {
		lo, lok := iv.lo.v.(Date)
		hi, hok := iv.hi.v.(Date)
		if !lok || !hok {
			return 0
		}
		if !iv.lo.incl {
			lo++
		}
		if !iv.hi.incl {
			hi--
		}
		n += max(int64(hi-lo)+1, 0)
	}
	return n
}

func projection(e *Expr, col string) (ivset, bool, bool) {
	bs, ok := boxes(e)
	if !ok {
		return nil, false, false
	}
	var s ivset
	exact := true
	for _, b := range bs {
		if !b.satisfiable() {
			continue
		}
		for c := range b.cols {
			if c != col {
				exact = false
			}
		}
		if len(b.opaque) > 0 {
			exact = false
		}
		if v, ok := b.cols[col]; ok {
			s = s.union(v)
		} else {
			s = s.union(everything)
		}
	}
	return s, exact, true
}

func (b box) satisfiable() bool {
	for _, s := range b.cols {
		if len(s) == 0 {
			return false
		}
	}
	return true
}

// within: every row b admits, o admits. o's constraints must each be implied
// by b's; b may constrain more.
func (b box) within(o box) bool {
	for col, os := range o.cols {
		bs, ok := b.cols[col]
		if !ok || !bs.subset(os) {
			return false
		}
	}
	for a := range o.opaque {
		if !b.opaque[a] {
			return false
		}
	}
	return true
}

func (b box) and(c box) box {
	out := box{cols: map[string]ivset{}, opaque: map[string]bool{}}
	for k, v := range b.cols {
		out.cols[k] = v
	}
	for k, v := range c.cols {
		if cur, ok := out.cols[k]; ok {
			out.cols[k] = cur.intersect(v)
		} else {
			out.cols[k] = v
		}
	}
	for k := range b.opaque {
		out.opaque[k] = true
	}
	for k := range c.opaque {
		out.opaque[k] = true
	}
	return out
}

// boxes turns e into a union of boxes (DNF), negations pushed to the atoms.
func boxes(e *Expr) ([]box, bool) { return dnf(e, false) }

func dnf(e *Expr, neg bool) ([]box, bool) {
	switch e.Op {
	case OpNot:
		return dnf(e.Args[0], !neg)
	case OpAnd, OpOr:
		l, ok := dnf(e.Args[0], neg)
		if !ok {
			return nil, false
		}
		r, ok := dnf(e.Args[1], neg)
		if !ok {
			return nil, false
		}
		if (e.Op == OpOr) != neg { // OR, or NOT AND (De Morgan)
			if len(l)+len(r) > maxBoxes {
				return nil, false
			}
			return append(l, r...), true
		}
		if len(l)*len(r) > maxBoxes {
			return nil, false
		}
		var out []box
		for _, a := range l {
			for _, b := range r {
				out = append(out, a.and(b))
			}
		}
		return out, true
	}
	return []box{atom(e, neg)}, true
}

// atom is one comparison as a box. In the window's TRUE semantics a negated
// comparison is the flipped comparison (NULL is outside both), so negation
// never widens an atom into "anything".
func atom(e *Expr, neg bool) box {
	b := box{cols: map[string]ivset{}, opaque: map[string]bool{}}
	if col, kind, set, ok := columnSet(e); ok {
		if neg {
			set = set.complement()
		}
		if kind == KBool {
			set = boolPoints(set)
		}
		b.cols[col] = set
		return b
	}
	key := e.CEL()
	if neg {
		key = "!" + key
	}
	b.opaque[key] = true
	return b
}

// columnSet reads an atom as "column ∈ set" when it has that form:
// col op literal (either side), date_add(col, n) op literal, col in [...],
// and a bare boolean column.
func columnSet(e *Expr) (string, Kind, ivset, bool) {
	switch e.Op {
	case OpCol:
		if e.Kind == KBool {
			return e.Col.Name, KBool, point(true), true
		}
	case OpIn:
		col, shift, ok := columnOf(e.Args[0])
		if !ok {
			return "", 0, nil, false
		}
		var s ivset
		for _, v := range e.Args[1:] {
			s = s.union(point(shiftVal(v.Val, -shift)))
		}
		return col, e.Args[0].Kind, s, true
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		l, r, op := e.Args[0], e.Args[1], e.Op
		if l.Op == OpLit {
			l, r, op = r, l, Mirror(op)
		}
		col, shift, ok := columnOf(l)
		if !ok || r.Op != OpLit {
			return "", 0, nil, false
		}
		v := shiftVal(r.Val, -shift)
		if f, isF := v.(float64); isF && l.Kind == KInt {
			return col, KInt, intRange(op, f), true
		}
		return col, l.Kind, rangeOf(op, v), true
	}
	return "", 0, nil, false
}

// boolPoints keeps a boolean column's set as the points false and true.
func boolPoints(s ivset) ivset {
	var out ivset
	for _, v := range []bool{false, true} {
		if point(v).subset(s) {
			out = out.union(point(v))
		}
	}
	return out
}

// columnOf accepts a column or date_add(column, n), returning the shift.
func columnOf(e *Expr) (string, int64, bool) {
	switch e.Op {
	case OpCol:
		return e.Col.Name, 0, true
	case OpDateAdd:
		if e.Args[0].Op == OpCol {
			return e.Args[0].Col.Name, e.N, true
		}
	}
	return "", 0, false
}

func shiftVal(v any, n int64) any {
	if d, ok := v.(Date); ok && n != 0 {
		return d + Date(n)
	}
	return v
}

func point(v any) ivset { return ivset{{lo: bound{v, true}, hi: bound{v, true}}} }

func rangeOf(op Op, v any) ivset {
	var iv interval
	switch op {
	case OpEq:
		return point(v)
	case OpNe:
		return point(v).complement()
	case OpLt:
		iv = interval{hi: bound{v, false}}
	case OpLe:
		iv = interval{hi: bound{v, true}}
	case OpGt:
		iv = interval{lo: bound{v, false}}
	case OpGe:
		iv = interval{lo: bound{v, true}}
	}
	return ivset{normalize(iv)}
}

// intRange is an integer column compared with a fractional literal:
// qty < 2.5 is qty <= 2.
func intRange(op Op, f float64) ivset {
	if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return rangeOf(op, int64(f))
	}
	if math.Abs(f) >= 1<<62 {
		return rangeOf(op, f) // beyond int64: leave as a number
	}
	lo, hi := int64(math.Floor(f)), int64(math.Ceil(f))
	switch op {
	case OpEq:
		return nil
	case OpNe:
		return everything
	case OpLt, OpLe:
		return rangeOf(OpLe, lo)
	}
	return rangeOf(OpGe, hi)
}

// Coverage is the union of the windows' ranges on col, rendered like a
// plan's ranges ("[2026-10-01, +∞)"); windows rwc cannot reason about count
// as covering nothing, so coverage is never overstated.
func Coverage(windows []*Predicate, col string) string {
	var s ivset
	for _, w := range windows {
		if p, _, ok := projection(w.Root, col); ok {
			s = s.union(p)
		}
	}
	return s.String()
}

// Range renders what p selects on col, when p constrains col alone.
func Range(p *Predicate, col string) (string, bool) {
	s, exact, ok := projection(p.Root, col)
	if !ok || !exact {
		return "", false
	}
	return s.String(), true
}

// DateHull is the least closed range of dates on col that holds every row
// p selects: lo and hi are its ends, hasLo and hasHi false where it is
// unbounded. ok is false when p cannot be reasoned about on col (an atom
// rwc treats as opaque there, or col is not a date) or selects nothing.
// It may be wider than p (a hull of disjoint ranges), never narrower.
func DateHull(p *Predicate, col string) (lo, hi Date, hasLo, hasHi, ok bool) {
	s, _, okp := projection(p.Root, col)
	s = removeEmpty(s)
	if !okp || len(s) == 0 {
		return 0, 0, false, false, false
	}
	first, last := s[0].lo, s[len(s)-1].hi
	if first.v != nil {
		if lo, hasLo = dateBound(discrete(first, true)); !hasLo {
			return 0, 0, false, false, false
		}
	}
	if last.v != nil {
		if hi, hasHi = dateBound(discrete(last, false)); !hasHi {
			return 0, 0, false, false, false
		}
	}
	return lo, hi, hasLo, hasHi, true
}

package query

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Output columns of a query, by name and by position.

// leftmost is the first plain SELECT of a set operation: it names the
// output columns.
func leftmost(s *pg.SelectStmt) *pg.SelectStmt {
	for i := 0; s.GetLarg() != nil && i < maxDepth; i++ {
		s = s.GetLarg()
	}
	return s
}

// arms are the plain SELECTs of a set operation, left to right.
func arms(s *pg.SelectStmt) []*pg.SelectStmt {
	var out []*pg.SelectStmt
	var visit func(s *pg.SelectStmt, depth int)
	visit = func(s *pg.SelectStmt, depth int) {
		if s == nil || depth > maxDepth {
			return
		}
		if isSetOp(s) {
			visit(s.GetLarg(), depth+1)
			visit(s.GetRarg(), depth+1)
			return
		}
		out = append(out, s)
	}
	visit(s, 0)
	return out
}

func isSetOp(s *pg.SelectStmt) bool {
	return s.GetOp() != pg.SetOperation_SETOP_NONE && s.GetOp() != pg.SetOperation_SET_OPERATION_UNDEFINED
}

// target is one entry of a plain SELECT's target list.
type target struct {
	name    string
	named   bool // PostgreSQL has a real name for it (not ?column?)
	aliased bool
	val     *pg.Node
	offset  int
	star    bool
	qual    string // the `t` of `t.*`
}

// targets lists a plain SELECT's output columns; a VALUES list yields
// column1, column2, … as in PostgreSQL.
func targets(s *pg.SelectStmt) []target {
	if vl := s.GetValuesLists(); len(vl) > 0 {
		var out []target
		for i, v := range vl[0].GetList().GetItems() {
			out = append(out, target{name: "column" + strconv.Itoa(i+1), named: true, val: v, offset: nodeLocation(v)})
		}
		return out
	}
	var out []target
	for _, n := range s.GetTargetList() {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		t := target{val: rt.GetVal(), offset: int(rt.GetLocation())}
		switch {
		case rt.GetName() != "":
			t.name, t.named, t.aliased = rt.GetName(), true, true
		case isStar(rt.GetVal()):
			t.star, t.qual = true, starQualifier(rt.GetVal())
		default:
			t.name, t.named = figureColname(rt.GetVal())
		}
		out = append(out, t)
	}
	return out
}

// starQualifier is the `t` of `t.*` ("" for `*`).
func starQualifier(n *pg.Node) string {
	f := n.GetColumnRef().GetFields()
	if len(f) < 2 {
		return ""
	}
	return f[len(f)-2].GetString_().GetSval()
}

// firstTarget is the first ResTarget of the query's leftmost SELECT.
func firstTarget(s *pg.SelectStmt) *pg.ResTarget {
	tl := leftmost(s).GetTargetList()
	if len(tl) == 0 {
		return nil
	}
	return tl[0].GetResTarget()
}

// outputs are the names of a query's output columns that are written out,
// and whether that is all of them (no `*`).
func (a *analyzer) outputs(s *pg.SelectStmt) (names []string, complete bool) {
	complete = true
	for _, t := range targets(leftmost(s)) {
		if t.star {
			complete = false
			continue
		}
		names = append(names, t.name)
	}
	return names, complete
}

// outputIndex is the position of the first output column called name, and
// false when it is not written out or a `*` before it makes positions
// unknown.
func outputIndex(s *pg.SelectStmt, name string) (int, bool) {
	for i, t := range targets(leftmost(s)) {
		if t.star {
			return -1, false
		}
		if t.name == name {
			return i, true
		}
	}
	return -1, false
}

// outputNameAt is the name of the output column at pos, if known.
func outputNameAt(s *pg.SelectStmt, pos int) (string, bool) {
	ts := targets(leftmost(s))
	if pos < 0 || pos >= len(ts) {
		return "", false
	}
	for _, t := range ts[:pos+1] {
		if t.star {
			return "", false
		}
	}
	return ts[pos].name, true
}

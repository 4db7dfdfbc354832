package query

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Grouping, and when filtering a level's input is the same as filtering
// its output.

// aggregated: the level groups its rows (GROUP BY, HAVING, or an aggregate
// in its target list or ORDER BY).
func (l *scope) aggregated() bool {
	s := l.stmt
	if len(s.GetGroupClause()) > 0 || s.GetHavingClause() != nil {
		return true
	}
	for _, n := range append(append([]*pg.Node{}, s.GetTargetList()...), s.GetSortClause()...) {
		if agg, _ := exprFlags(n); agg {
			return true
		}
	}
	return false
}

// inGroupBy reports whether output column idx (expr, named name) is a
// grouping key of an aggregated level. A GROUP BY item matches by output
// position (`GROUP BY 1`), by the same column (resolved, so `date` and
// `o.date` match, and so do columns equal through joins), by the same
// expression, or by the output name. The last is what PostgreSQL does only
// when no input column has that name; without a catalog rwc assumes the
// alias was meant. Keys inside ROLLUP / CUBE / GROUPING SETS are not in
// every grouping set, so they do not count.
func (l *scope) inGroupBy(idx int, expr *pg.Node, name string) bool {
	if !l.aggregated() {
		return false
	}
	key, plain := colKey{}, false
	if cr := expr.GetColumnRef(); cr != nil {
		key, plain = l.resolve(cr)
	}
	ts := targets(l.stmt)
	for _, g := range l.stmt.GetGroupClause() {
		if c := g.GetAConst(); c != nil {
			if iv := c.GetIval(); iv != nil && idx >= 0 && int(iv.GetIval()) == idx+1 && !starBefore(ts, idx) {
				return true
			}
			continue
		}
		if cr := g.GetColumnRef(); cr != nil {
			if f, ok := stringList(cr.GetFields()); ok && len(f) == 1 && f[0] == name {
				return true
			}
			if k, ok := l.resolve(cr); ok && plain && l.same(k, key) {
				return true
			}
		}
		if sameExpr(g, expr) {
			return true
		}
	}
	return false
}

func starBefore(ts []target, idx int) bool {
	for _, t := range ts[:min(idx, len(ts))] {
		if t.star {
			return true
		}
	}
	return false
}

// pushdownSafe reports whether a predicate on column k can be applied to
// this level's input rows instead of its output rows without changing the
// result. Not when LIMIT/OFFSET picks rows first, when grouping does not
// keep k (aggregates over rows outside the window), when DISTINCT ON picks
// one row per key that does not include k, or when a window function sees
// rows across values of k (it must be partitioned by k).
func (l *scope) pushdownSafe(k colKey, inGroupBy bool) bool {
	s := l.stmt
	if s.GetLimitCount() != nil || s.GetLimitOffset() != nil {
		return false
	}
	if l.aggregated() && !inGroupBy {
		return false
	}
	if on := s.GetDistinctClause(); len(on) > 0 && on[0].GetNode() != nil {
		if !l.mentions(on, k) {
			return false
		}
	}
	var roots []*pg.Node
	roots = append(roots, s.GetTargetList()...)
	roots = append(roots, s.GetSortClause()...)
	for _, r := range roots {
		for _, w := range windowDefs(r) {
			part, ok := l.partitionOf(w)
			if !ok || !l.mentions(part, k) {
				return false
			}
		}
	}
	return true
}

// mentions: one of the expressions is a plain reference to k or to a
// column equal to it.
func (l *scope) mentions(exprs []*pg.Node, k colKey) bool {
	for _, e := range exprs {
		if cr := e.GetColumnRef(); cr != nil {
			if m, ok := l.resolve(cr); ok && l.same(m, k) {
				return true
			}
		}
	}
	return false
}

// partitionOf is a window's PARTITION BY list, following `OVER w` and
// `OVER (w ORDER BY …)` to the WINDOW clause. ok is false when a named
// window is missing.
func (l *scope) partitionOf(over *pg.WindowDef) ([]*pg.Node, bool) {
	w := over
	if w.GetName() != "" { // OVER w: the whole definition is in the WINDOW clause
		if w = l.window(w.GetName()); w == nil {
			return nil, false
		}
	}
	// A chain of WINDOW definitions refining each other; bounded in case
	// the names loop (PostgreSQL would reject that later).
	for i := 0; i < 100; i++ {
		if len(w.GetPartitionClause()) > 0 {
			return w.GetPartitionClause(), true
		}
		if w.GetRefname() == "" {
			return nil, true
		}
		if w = l.window(w.GetRefname()); w == nil {
			return nil, false
		}
	}
	return nil, false
}

func (l *scope) window(name string) *pg.WindowDef {
	for _, n := range l.stmt.GetWindowClause() {
		if d := n.GetWindowDef(); d != nil && d.GetName() == name {
			return d
		}
	}
	return nil
}

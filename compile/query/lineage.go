package query

import (
	"slices"
	"sort"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// trace is the lineage of one output column of one query (any level).
// Refs in source and exposed are valid in that query's own scope.
type trace struct {
	found, fromStar bool
	kind            ColumnKind
	source          *ColumnSource
	inGroupBy       bool
	exposed         []Exposure
	notExposed      []TableRef
	// pushable: a condition on this output column reaches the source's
	// scan (the source is among exposed), so a query one level up that
	// reads it as a subquery can count the source as exposed.
	pushable bool
}

type traceKey struct {
	stmt *pg.SelectStmt
	name string
}

// Lineage traces an output column of the top-level query by name. With a
// set operation the column is traced through every arm by position.
func (a *Analysis) Lineage(column string) Lineage {
	if a == nil || a.q == nil {
		return Lineage{}
	}
	q := a.q
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.traceQuery(q.top, column, 0)
	var src *ColumnSource
	if t.source != nil {
		c := *t.source // traces are cached: hand out copies
		src = &c
	}
	return Lineage{
		Found:      t.found,
		Kind:       t.kind,
		FromStar:   t.fromStar,
		Source:     src,
		InGroupBy:  t.inGroupBy,
		Exposed:    slices.Clone(t.exposed),
		NotExposed: slices.Clone(t.notExposed),
	}
}

// traceQuery traces output column name of s. Results are memoised: a CTE
// read from many places is traced once, which keeps chains of CTEs that
// join their predecessors linear instead of exponential.
func (a *analyzer) traceQuery(s *pg.SelectStmt, name string, depth int) *trace {
	key := traceKey{s, name}
	if t, ok := a.traces[key]; ok {
		return t
	}
	var t *trace
	switch {
	case depth > maxDepth:
		t = &trace{found: true, kind: Expression}
	case isSetOp(s):
		t = a.traceSetOp(s, name, depth)
	default:
		t = a.scope(s).trace(name, depth)
	}
	a.traces[key] = t
	return t
}

// traceSetOp combines the arms. The value is Plain only if it is Plain in
// every arm. Nothing is exposed: whether PostgreSQL pushes a condition into
// the arms depends on their column types, which needs the catalog, and
// rwc has no single scope to add a condition to.
func (a *analyzer) traceSetOp(s *pg.SelectStmt, name string, depth int) *trace {
	all := arms(s)
	pos, positional := outputIndex(all[0], name)
	res := &trace{}
	aggArms, grouped := 0, 0
	for i, arm := range all {
		armName := name
		if positional {
			n, ok := outputNameAt(arm, pos)
			if !ok {
				res.kind = Expression // columns of this arm cannot be lined up
				continue
			}
			armName = n
		}
		t := a.traceQuery(arm, armName, depth+1)
		if i == 0 {
			res.found, res.source = t.found, t.source
		}
		if !t.found && i > 0 {
			res.kind = Expression
		}
		res.fromStar = res.fromStar || t.fromStar
		if res.kind == 0 || res.kind == Plain {
			res.kind = t.kind
		}
		if a.scope(arm).aggregated() {
			aggArms++
			if t.inGroupBy {
				grouped++
			}
		}
		res.notExposed = append(res.notExposed, a.fromTables(arm, depth+1)...)
	}
	if res.kind != Plain {
		res.source = nil
	}
	res.inGroupBy = aggArms > 0 && grouped == aggArms
	res.notExposed = distinctOccurrences(res.notExposed)
	return res
}

// trace traces an output column of a plain SELECT.
func (l *scope) trace(name string, depth int) *trace {
	tables := l.a.fromTables(l.stmt, depth)
	ts := targets(l.stmt)
	idx := slices.IndexFunc(ts, func(t target) bool { return !t.star && t.name == name })
	var expr *pg.Node
	res := &trace{found: true}
	if idx >= 0 {
		expr = ts[idx].val
	} else {
		// Not written out: assume a `*` supplies it, as a reference to the
		// column through the star's qualifier.
		qual, stars := "", 0
		for _, t := range ts {
			if t.star {
				if stars == 0 || qual == t.qual {
					qual = t.qual
				} else {
					qual = ""
				}
				stars++
			}
		}
		if stars == 0 {
			return &trace{}
		}
		fields := []*pg.Node{pg.MakeStrNode(name)}
		if qual != "" {
			fields = []*pg.Node{pg.MakeStrNode(qual), pg.MakeStrNode(name)}
		}
		expr = pg.MakeColumnRefNode(fields, -1)
		res.fromStar = true
	}
	res.kind = exprKind(expr)
	res.inGroupBy = l.inGroupBy(idx, expr, name)
	res.notExposed = tables
	if res.kind != Plain {
		return res
	}
	cr := expr.GetColumnRef()
	k, ok := l.resolve(cr)
	if !ok {
		res.source = &ColumnSource{Column: lastString(cr.GetFields()), Ref: refText(cr)}
		return res
	}
	// Prefer the qualified reference; where there is none (hidden by a join
	// alias), the reference as written is valid where it is written.
	ref, qualified := l.refFor(k)
	if !qualified {
		ref = refText(cr)
	}
	it := l.items[k.item]
	switch it.kind {
	case itemTable:
		res.source = &ColumnSource{Table: *it.table, Column: k.col, Ref: ref}
	case itemDerived:
		inner := l.traceItem(k, depth)
		res.fromStar = res.fromStar || inner.fromStar
		if !inner.found || inner.kind != Plain || inner.source == nil {
			res.kind = Expression
			if inner.found && inner.kind != Plain {
				res.kind = inner.kind
			}
			return res
		}
		res.source = &ColumnSource{Table: inner.source.Table, Column: inner.source.Column, Ref: ref}
	default:
		// A function's or a renamed table's column: a value rwc cannot see
		// into.
		res.kind = Expression
		return res
	}
	if !l.pushdownSafe(k, res.inGroupBy) {
		return res
	}
	for _, m := range l.class(k) {
		res.exposed = append(res.exposed, l.exposures(m, depth)...)
	}
	res.exposed = distinctExposures(res.exposed)
	res.notExposed = nil
	for _, t := range tables {
		if !slices.ContainsFunc(res.exposed, func(e Exposure) bool { return e.Table == t }) {
			res.notExposed = append(res.notExposed, t)
		}
	}
	res.pushable = res.source.Table.Name != "" && slices.ContainsFunc(res.exposed, func(e Exposure) bool { return e.Table == res.source.Table })
	return res
}

// exposures is what one member of the predicate column's equivalence class
// contributes: the base table itself, or for a subquery or CTE the table
// its column plainly comes from, when a condition on the subquery's output
// reaches that table (PostgreSQL pushes it down). Tables deeper inside that
// are only equal through the subquery's own joins are not counted: the
// condition is not copied across those.
func (l *scope) exposures(m colKey, depth int) []Exposure {
	it := l.items[m.item]
	ref, ok := l.refFor(m)
	if !ok {
		return nil
	}
	switch it.kind {
	case itemTable:
		return []Exposure{{Table: *it.table, Column: m.col, Ref: ref}}
	case itemDerived:
		if it.cte != nil && !it.cte.inlined() {
			return nil
		}
		t := l.traceItem(m, depth)
		if t.found && t.kind == Plain && t.pushable {
			return []Exposure{{Table: t.source.Table, Column: t.source.Column, Ref: ref}}
		}
	}
	return nil
}

// traceItem traces column k.col of a subquery or CTE item, mapping it
// through the item's column aliases by position.
func (l *scope) traceItem(k colKey, depth int) *trace {
	it := l.items[k.item]
	if pos := slices.Index(it.colnames, k.col); pos >= 0 {
		name, ok := outputNameAt(it.query, pos)
		if !ok {
			return &trace{found: true, kind: Expression}
		}
		return l.a.traceQuery(it.query, name, depth+1)
	}
	if len(it.colnames) > 0 {
		// Columns past the alias list keep their names; make sure the name
		// is not one of the renamed ones.
		if pos, ok := outputIndex(it.query, k.col); !ok || pos < len(it.colnames) {
			return &trace{found: true, kind: Expression}
		}
	}
	return l.a.traceQuery(it.query, k.col, depth+1)
}

// fromTables are the base tables in a query's FROM trees, subqueries and
// CTEs they read included: the scans a predicate could reduce. Memoised, and
// a query already being listed (a recursive CTE reading itself) adds nothing.
func (a *analyzer) fromTables(s *pg.SelectStmt, depth int) []TableRef {
	if ts, ok := a.tablesOf[s]; ok || depth > maxDepth {
		return ts
	}
	a.tablesOf[s] = nil
	var out []TableRef
	for _, arm := range arms(s) {
		for _, it := range a.scope(arm).items {
			switch {
			case it.table != nil:
				out = append(out, *it.table)
			case it.query != nil:
				out = append(out, a.fromTables(it.query, depth+1)...)
			}
		}
	}
	out = distinctOccurrences(out)
	a.tablesOf[s] = out
	return out
}

// distinctOccurrences drops repeats of the same reference (a CTE read
// twice lists its tables twice) and orders by position.
func distinctOccurrences(ts []TableRef) []TableRef {
	seen := map[TableRef]bool{}
	var out []TableRef
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

func distinctExposures(es []Exposure) []Exposure {
	seen := map[Exposure]bool{}
	var out []Exposure
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Table.Offset < out[j].Table.Offset })
	return out
}

// refText renders a column reference as written (normalised quoting).
func refText(cr *pg.ColumnRef) string {
	f, ok := stringList(cr.GetFields())
	if !ok || len(f) == 0 {
		return ""
	}
	s := quoteIdent(f[0])
	for _, p := range f[1:] {
		s += "." + quoteLabel(p)
	}
	return s
}

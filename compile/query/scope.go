package query

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// A level is one plain SELECT (not a set operation): its FROM items, how
// their columns are equated, and how names resolve. Without a catalog the
// columns of a base table are unknown; a table is only known to have a
// column when the query says so (a qualified reference, USING).

type itemKind int

const (
	itemTable   itemKind = iota // a base table
	itemDerived                 // a subquery or CTE reference: traced into
	itemOpaque                  // anything rwc does not trace (functions, recursive CTEs, tables with renamed columns)
)

type fromItem struct {
	kind    itemKind
	refname string    // the name that qualifies its columns; "" if none
	table   *TableRef // the base table (itemTable, and itemOpaque for renamed columns)
	query   *pg.SelectStmt
	cte     *cteDef
	// colnames rename the item's columns by position: `AS s(a, b)` or a
	// CTE's column list.
	colnames []string
	// known are columns the item certainly has; outputs are all of them
	// when complete is true (a subquery without `*`).
	known    map[string]bool
	complete bool
	// hider is the outermost join with an alias around the item: `(a JOIN
	// b …) AS j` hides a and b, so outside the join their columns can only
	// be referenced as j.col.
	hider *fromTree
}

// fromTree mirrors the FROM clause: leaves are items, inner nodes joins.
type fromTree struct {
	item        int // index in level.items; -1 for a join
	join        *pg.JoinExpr
	left, right *fromTree
	// merged are the join's USING (or NATURAL common) columns whose value
	// is one side's column; mergedBad are those that are not (FULL JOIN).
	merged    map[string]colKey
	mergedBad map[string]bool
}

// colKey is a column of a FROM item.
type colKey struct {
	item int
	col  string
}

// scope is one SELECT of a query being analysed: its FROM, its WHERE and
// what it groups by, in which a column reference is resolved.
type scope struct {
	a     *analyzer
	stmt  *pg.SelectStmt
	env   *cteEnv
	items []*fromItem
	trees []*fromTree
	// quals are the ON clauses, read for the columns they mention.
	quals  []*pg.Node
	parent map[colKey]colKey // union-find of equal columns
}

// level returns the analysis of one plain SELECT, built once.
func (a *analyzer) scope(s *pg.SelectStmt) *scope {
	if l, ok := a.levels[s]; ok {
		return l
	}
	l := &scope{a: a, stmt: s, env: a.envOf[s], parent: map[colKey]colKey{}}
	a.levels[s] = l
	for _, n := range s.GetFromClause() {
		l.trees = append(l.trees, l.addFrom(n))
	}
	l.learnColumns()
	for _, t := range l.trees {
		l.equateJoins(t)
	}
	// WHERE equalities hold on every output row, whatever the join types.
	for _, c := range conjuncts(s.GetWhereClause()) {
		l.equate(c, l.trees)
	}
	return l
}

func (l *scope) addFrom(n *pg.Node) *fromTree {
	switch v := n.GetNode().(type) {
	case *pg.Node_JoinExpr:
		j := v.JoinExpr
		t := &fromTree{item: -1, join: j, merged: map[string]colKey{}, mergedBad: map[string]bool{}}
		t.left, t.right = l.addFrom(j.GetLarg()), l.addFrom(j.GetRarg())
		if j.GetQuals() != nil {
			l.quals = append(l.quals, j.GetQuals())
		}
		if j.GetAlias() != nil {
			for _, i := range l.leaves([]*fromTree{t}) {
				l.items[i].hider = t
			}
		}
		return t
	case *pg.Node_RangeVar:
		return l.leaf(l.rangeVarItem(v.RangeVar))
	case *pg.Node_RangeSubselect:
		rs := v.RangeSubselect
		it := &fromItem{kind: itemOpaque, refname: rs.GetAlias().GetAliasname(), colnames: aliasColnames(rs.GetAlias())}
		if q := rs.GetSubquery().GetSelectStmt(); q != nil {
			it.kind, it.query = itemDerived, q
		}
		return l.leaf(it)
	case *pg.Node_RangeTableSample:
		if rv := v.RangeTableSample.GetRelation().GetRangeVar(); rv != nil {
			it := l.rangeVarItem(rv)
			if it.kind == itemTable {
				// A sample is a subset of the table; a predicate pushed
				// into it still selects the same rows of the sample.
				return l.leaf(it)
			}
		}
		return l.leaf(&fromItem{kind: itemOpaque})
	case *pg.Node_RangeFunction:
		rf := v.RangeFunction
		return l.leaf(&fromItem{kind: itemOpaque, refname: functionRefname(rf), colnames: aliasColnames(rf.GetAlias())})
	case *pg.Node_RangeTableFunc:
		return l.leaf(&fromItem{kind: itemOpaque, refname: v.RangeTableFunc.GetAlias().GetAliasname()})
	case *pg.Node_JsonTable:
		return l.leaf(&fromItem{kind: itemOpaque, refname: v.JsonTable.GetAlias().GetAliasname()})
	}
	return l.leaf(&fromItem{kind: itemOpaque})
}

func (l *scope) leaf(it *fromItem) *fromTree {
	if it.known == nil {
		it.known = map[string]bool{}
	}
	l.items = append(l.items, it)
	return &fromTree{item: len(l.items) - 1}
}

func (l *scope) rangeVarItem(rv *pg.RangeVar) *fromItem {
	ref := rv.GetAlias().GetAliasname()
	if ref == "" {
		ref = rv.GetRelname()
	}
	cols := aliasColnames(rv.GetAlias())
	if d := l.env.cteFor(rv); d != nil {
		if len(cols) == 0 {
			cols = stringsOf(d.node.GetAliascolnames())
		}
		it := &fromItem{kind: itemDerived, refname: ref, query: d.query, cte: d, colnames: cols}
		if d.recursive || d.query == nil {
			it.kind = itemOpaque
		}
		return it
	}
	t := tableRef(rv)
	if len(cols) > 0 {
		// `t AS x(a, b)` renames t's columns by position; which base column
		// x.a is needs the catalog.
		return &fromItem{kind: itemOpaque, refname: ref, table: &t, colnames: cols}
	}
	return &fromItem{kind: itemTable, refname: ref, table: &t}
}

// functionRefname is the name PostgreSQL gives a function in FROM: its
// alias, else the function's name.
func functionRefname(rf *pg.RangeFunction) string {
	if a := rf.GetAlias().GetAliasname(); a != "" {
		return a
	}
	if fs := rf.GetFunctions(); len(fs) == 1 && !rf.GetIsRowsfrom() {
		if l := fs[0].GetList(); l != nil && len(l.GetItems()) > 0 {
			if f := l.GetItems()[0].GetFuncCall(); f != nil {
				return lastString(f.GetFuncname())
			}
		}
	}
	return ""
}

func aliasColnames(a *pg.Alias) []string {
	return stringsOf(a.GetColnames())
}

func stringsOf(nodes []*pg.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.GetString_().GetSval())
	}
	return out
}

// learnColumns records which columns each item is known to have: from a
// subquery's output list, from qualified references anywhere in this level,
// and from USING lists.
func (l *scope) learnColumns() {
	for _, it := range l.items {
		for _, c := range it.colnames {
			it.known[c] = true
		}
		if it.kind != itemDerived {
			continue
		}
		outs, complete := l.a.outputs(it.query)
		for i, o := range outs {
			if i >= len(it.colnames) {
				it.known[o] = true
			}
		}
		it.complete = complete
	}
	s := l.stmt
	roots := append([]*pg.Node{}, s.GetTargetList()...)
	roots = append(roots, s.GetWhereClause(), s.GetHavingClause())
	roots = append(roots, s.GetGroupClause()...)
	roots = append(roots, s.GetSortClause()...)
	roots = append(roots, s.GetWindowClause()...)
	roots = append(roots, s.GetDistinctClause()...)
	roots = append(roots, l.quals...)
	for _, r := range roots {
		walkExpr(r, func(n *pg.Node) bool {
			if c := n.GetColumnRef(); c != nil {
				if f, ok := stringList(c.GetFields()); ok && len(f) >= 2 {
					for _, it := range l.items {
						if it.refname == f[len(f)-2] {
							it.known[f[len(f)-1]] = true
						}
					}
				}
			}
			return true
		})
	}
	var using func(t *fromTree)
	using = func(t *fromTree) {
		if t == nil || t.join == nil {
			return
		}
		for _, c := range stringsOf(t.join.GetUsingClause()) {
			for _, side := range []*fromTree{t.left, t.right} {
				if side.item >= 0 {
					l.items[side.item].known[c] = true
				}
			}
		}
		using(t.left)
		using(t.right)
	}
	for _, t := range l.trees {
		using(t)
	}
}

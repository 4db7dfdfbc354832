package query

import (
	"sort"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Name resolution and column equalities within one level.

type lookupState int

const (
	absent    lookupState = iota // no item in the subtree is known to have it
	found                        // exactly this column
	ambiguous                    // several, or a merged value that is no single column
)

// lookup resolves an unqualified column name inside a FROM subtree.
func (l *scope) lookup(t *fromTree, c string) (colKey, lookupState) {
	if t.item >= 0 {
		if l.items[t.item].known[c] {
			return colKey{t.item, c}, found
		}
		return colKey{}, absent
	}
	if k, ok := t.merged[c]; ok {
		return k, found
	}
	if t.mergedBad[c] {
		return colKey{}, ambiguous
	}
	lk, ls := l.lookup(t.left, c)
	rk, rs := l.lookup(t.right, c)
	switch {
	case ls == ambiguous || rs == ambiguous || (ls == found && rs == found):
		return colKey{}, ambiguous
	case ls == found:
		if t.join.GetIsNatural() && !preservesLeft(t.join) {
			// The other side may have c too (NATURAL merges it) and
			// then the value is not this side's.
			return colKey{}, ambiguous
		}
		return lk, found
	case rs == found:
		if t.join.GetIsNatural() && !preservesRight(t.join) {
			return colKey{}, ambiguous
		}
		return rk, found
	}
	return colKey{}, absent
}

// preservesLeft: in a merged (USING/NATURAL) column of this join, the value
// is the left side's.
func preservesLeft(j *pg.JoinExpr) bool {
	return j.GetJointype() == pg.JoinType_JOIN_INNER || j.GetJointype() == pg.JoinType_JOIN_LEFT
}

func preservesRight(j *pg.JoinExpr) bool {
	return j.GetJointype() == pg.JoinType_JOIN_INNER || j.GetJointype() == pg.JoinType_JOIN_RIGHT
}

// refFor renders a reference to column k valid at this level (outside any
// join), or false when there is none: an item hidden by a join alias is
// reachable only through the alias, and only if the alias's column is k
// itself; a subquery without an alias has no name at all.
func (l *scope) refFor(k colKey) (string, bool) {
	it := l.items[k.item]
	if h := it.hider; h != nil {
		a := h.join.GetAlias()
		if len(a.GetColnames()) > 0 {
			return "", false
		}
		if m, st := l.lookup(h, k.col); st != found || m != k {
			return "", false
		}
		return columnRef(a.GetAliasname(), k.col), true
	}
	if it.refname == "" {
		return "", false
	}
	return columnRef(it.refname, k.col), true
}

// resolve finds the FROM item column a reference denotes at this level.
func (l *scope) resolve(cr *pg.ColumnRef) (colKey, bool) {
	return l.resolveIn(l.trees, cr)
}

func (l *scope) resolveIn(scope []*fromTree, cr *pg.ColumnRef) (colKey, bool) {
	f, ok := stringList(cr.GetFields())
	if !ok {
		return colKey{}, false
	}
	switch len(f) {
	case 1:
		return l.unqualified(scope, f[0])
	case 2:
		return l.qualified(scope, "", f[0], f[1])
	case 3:
		return l.qualified(scope, f[0], f[1], f[2])
	}
	return colKey{}, false
}

// qualified resolves schema.name.col or name.col. name is an item's alias
// (or table name when not aliased), or a join's alias.
func (l *scope) qualified(scope []*fromTree, schema, name, col string) (colKey, bool) {
	var res colKey
	ok := false
	var visit func(t *fromTree) bool
	visit = func(t *fromTree) bool {
		if t.item >= 0 {
			it := l.items[t.item]
			if it.refname != name {
				return false
			}
			if schema != "" && (it.table == nil || it.table.Schema != schema || it.table.Alias != "") {
				return false
			}
			res, ok = colKey{t.item, col}, true
			return true
		}
		if schema == "" && (t.join.GetAlias().GetAliasname() == name || t.join.GetJoinUsingAlias().GetAliasname() == name) {
			k, st := l.lookup(t, col)
			res, ok = k, st == found
			return true
		}
		return visit(t.left) || visit(t.right)
	}
	for _, t := range scope {
		if visit(t) {
			break
		}
	}
	return res, ok
}

// unqualified resolves a bare column name. PostgreSQL would find the one
// item that has it; without a catalog rwc only knows what the query shows,
// so it takes the item the query shows has it, else the only item that may
// have it, else gives up (the caller treats that as an unknown table).
func (l *scope) unqualified(scope []*fromTree, c string) (colKey, bool) {
	var key colKey
	n := 0
	for _, t := range scope {
		k, st := l.lookup(t, c)
		switch st {
		case ambiguous:
			return colKey{}, false
		case found:
			key = k
			n++
		}
	}
	if n == 1 {
		return key, true
	}
	if n > 1 {
		return colKey{}, false
	}
	cand := -1
	for _, i := range l.leaves(scope) {
		it := l.items[i]
		if it.complete && !it.known[c] {
			continue // a subquery's full output list does not have it
		}
		if cand >= 0 {
			return colKey{}, false
		}
		cand = i
	}
	if cand < 0 {
		return colKey{}, false
	}
	return colKey{cand, c}, true
}

func (l *scope) leaves(scope []*fromTree) []int {
	var out []int
	var visit func(t *fromTree)
	visit = func(t *fromTree) {
		if t.item >= 0 {
			out = append(out, t.item)
			return
		}
		visit(t.left)
		visit(t.right)
	}
	for _, t := range scope {
		visit(t)
	}
	return out
}

// equateJoins records the equalities joins guarantee, bottom-up. Only
// inner joins make columns equal on every row: on the nullable side of an
// outer join the column may be NULL where the other is not, so a predicate
// copied there would drop rows the query keeps.
func (l *scope) equateJoins(t *fromTree) {
	if t.join == nil {
		return
	}
	l.equateJoins(t.left)
	l.equateJoins(t.right)
	j := t.join
	inner := j.GetJointype() == pg.JoinType_JOIN_INNER
	cols := stringsOf(j.GetUsingClause())
	if j.GetIsNatural() {
		cols = l.commonColumns(t.left, t.right)
	}
	for _, c := range cols {
		lk, lok := l.usingSide(t.left, c)
		rk, rok := l.usingSide(t.right, c)
		switch {
		case preservesLeft(j) && lok:
			t.merged[c] = lk
		case j.GetJointype() == pg.JoinType_JOIN_RIGHT && rok:
			t.merged[c] = rk
		default:
			t.mergedBad[c] = true
		}
		if inner && lok && rok {
			l.union(lk, rk)
		}
	}
	if inner {
		for _, c := range conjuncts(j.GetQuals()) {
			l.equate(c, []*fromTree{t.left, t.right})
		}
	}
}

// usingSide is the column a USING name denotes on one side of the join.
func (l *scope) usingSide(t *fromTree, c string) (colKey, bool) {
	if t.item >= 0 {
		return colKey{t.item, c}, true
	}
	k, st := l.lookup(t, c)
	return k, st == found
}

// commonColumns is what rwc can tell NATURAL joins on: columns both sides
// are known to have. The real list may be longer; missing ones only lose
// equalities.
func (l *scope) commonColumns(a, b *fromTree) []string {
	names := func(t *fromTree) map[string]bool {
		m := map[string]bool{}
		for _, i := range l.leaves([]*fromTree{t}) {
			for c := range l.items[i].known {
				m[c] = true
			}
		}
		return m
	}
	na, nb := names(a), names(b)
	var out []string
	for c := range na {
		if nb[c] {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// equate records `x = y` between two columns of the scope.
func (l *scope) equate(cond *pg.Node, scope []*fromTree) {
	a, b, ok := columnEquality(cond)
	if !ok {
		return
	}
	ka, oka := l.resolveIn(scope, a)
	kb, okb := l.resolveIn(scope, b)
	if oka && okb {
		l.union(ka, kb)
	}
}

func (l *scope) find(k colKey) colKey {
	for {
		p, ok := l.parent[k]
		if !ok || p == k {
			return k
		}
		k = p
	}
}

func (l *scope) union(a, b colKey) {
	for _, k := range []colKey{a, b} {
		if _, ok := l.parent[k]; !ok {
			l.parent[k] = k
		}
	}
	if ra, rb := l.find(a), l.find(b); ra != rb {
		l.parent[ra] = rb
	}
}

func (l *scope) same(a, b colKey) bool { return l.find(a) == l.find(b) }

// class is every column equal to k, k included, in a stable order.
func (l *scope) class(k colKey) []colKey {
	out := []colKey{k}
	root := l.find(k)
	for m := range l.parent {
		if m != k && l.find(m) == root {
			out = append(out, m)
		}
	}
	sort.Slice(out[1:], func(i, j int) bool {
		a, b := out[1+i], out[1+j]
		if a.item != b.item {
			return a.item < b.item
		}
		return a.col < b.col
	})
	return out
}

package query

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Delta is the query with its reference to a table (at, one of
// References) read from rel instead (a trigger's transition table), when
// the query is linear in that table: each of its rows yields the query's
// rows for it, whatever the table's other rows are, so that the query over
// the table's rows plus some new ones is the query over the old rows plus
// the query over the new ones alone (bag union). That holds when the
// reference is the table's only one, a FROM item of the top-level SELECT
// reached through inner joins or the preserved side of outer ones, and the
// top level does not combine rows: no aggregate, GROUP BY, HAVING,
// DISTINCT, window function, LIMIT, OFFSET, set operation or row lock.
// Anything else is false: the caller recomputes instead.
func (a *Analysis) Delta(at TableRef, rel string) (string, bool) {
	if a.SetOp || a.Aggregates || len(a.Locks) > 0 || a.references(at) != 1 {
		return "", false
	}
	tree, err := pg.Parse(a.q.sql)
	if err != nil || len(tree.GetStmts()) != 1 {
		return "", false
	}
	top := tree.GetStmts()[0].GetStmt().GetSelectStmt()
	if top == nil || !combinesNoRows(top) {
		return "", false
	}
	var rv *pg.RangeVar
	for _, n := range top.GetFromClause() {
		if rv = linearRef(n, at.Offset, 0); rv != nil {
			break
		}
	}
	if rv == nil {
		return "", false
	}
	// The columns go on being named by the table's name or alias, but for
	// one named with its schema (public.fact.date), which the transition
	// table has not.
	if rv.Alias == nil {
		if schemaQualifiedColumn(tree) {
			return "", false
		}
		rv.Alias = &pg.Alias{Aliasname: rv.Relname}
	}
	rv.Catalogname, rv.Schemaname, rv.Relname, rv.Inh = "", "", rel, true
	out, err := faithful(tree)
	return out, err == nil
}

// references counts the query's references to at's table.
func (a *Analysis) references(at TableRef) int {
	n := 0
	for _, r := range a.References {
		if r.Schema == at.Schema && r.Name == at.Name {
			n++
		}
	}
	return n
}

// combinesNoRows: s, a plain SELECT, yields each row of its FROM on its
// own.
func combinesNoRows(s *pg.SelectStmt) bool {
	if isSetOp(s) || len(s.GetValuesLists()) > 0 || len(s.GetDistinctClause()) > 0 || len(s.GetGroupClause()) > 0 ||
		s.GetHavingClause() != nil || s.GetLimitCount() != nil || s.GetLimitOffset() != nil || len(s.GetLockingClause()) > 0 ||
		len(s.GetWindowClause()) > 0 {
		return false
	}
	for _, t := range s.GetTargetList() {
		if agg, win := exprFlags(t.GetResTarget().GetVal()); agg || win {
			return false
		}
	}
	return true
}

// linearRef finds the table reference at offset in the FROM item n, where
// each row of it yields rows on its own: a bare table, or a side of a join
// whose rows are all kept (both of an inner join, the left of a LEFT one,
// the right of a RIGHT one; neither of a FULL one).
func linearRef(n *pg.Node, offset, depth int) *pg.RangeVar {
	if depth > maxDepth {
		return nil
	}
	if rv := n.GetRangeVar(); rv != nil {
		if int(rv.GetLocation()) == offset {
			return rv
		}
		return nil
	}
	j := n.GetJoinExpr()
	if j == nil {
		return nil
	}
	if preservesLeft(j) {
		if rv := linearRef(j.GetLarg(), offset, depth+1); rv != nil {
			return rv
		}
	}
	if preservesRight(j) {
		return linearRef(j.GetRarg(), offset, depth+1)
	}
	return nil
}

// schemaQualifiedColumn reports whether a column reference of the tree
// names a schema (three or more parts: schema.table.column).
func schemaQualifiedColumn(tree *pg.ParseResult) bool {
	found := false
	walk(tree.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		if cr, ok := m.Interface().(*pg.ColumnRef); ok && len(cr.GetFields()) >= 3 {
			found = true
		}
		return !found
	})
	return found
}

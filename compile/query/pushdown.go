package query

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// PushTarget is a source table that a predicate over some output columns
// can filter directly: Refs maps each of those columns to the expression
// that names it in the top-level query (e.g. "date" -> "o.date").
type PushTarget struct {
	Table TableRef
	Refs  map[string]string
}

// Pushable lists the sources that expose every one of cols through the
// query's equalities, so that a predicate over cols can be applied to each
// of them in the top-level WHERE without changing the query's result.
// Lineage only reports exposures where that is safe (inner joins, columns
// kept by GROUP BY, no LIMIT, no windows across the column, no set
// operations), so a source missing here is one that must be read in full.
func (a *Analysis) Pushable(cols []string) []PushTarget {
	if len(cols) == 0 {
		return nil
	}
	type key struct{ schema, name, alias string }
	refs := map[key]map[string]string{}
	tables := map[key]TableRef{}
	for i, col := range cols {
		l := a.Lineage(col)
		if !l.Found || l.FromStar {
			return nil
		}
		seen := map[key]bool{}
		for _, e := range l.Exposed {
			k := key{e.Table.Schema, e.Table.Name, e.Table.Alias}
			if i == 0 {
				refs[k] = map[string]string{}
				tables[k] = e.Table
			}
			if m, ok := refs[k]; ok && !seen[k] {
				m[col] = e.Ref
				seen[k] = true
			}
		}
		for k := range refs {
			if !seen[k] {
				delete(refs, k)
			}
		}
	}
	var out []PushTarget
	for k, m := range refs {
		out = append(out, PushTarget{Table: tables[k], Refs: m})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table.Offset < out[j].Table.Offset })
	return out
}

// WithConditions returns sql with each condition ANDed into the top-level
// SELECT's WHERE clause, printed back by PostgreSQL's deparser. The
// conditions are rwc's own rendered predicates; each is parsed on its own
// first, so a condition can never change the query's shape.
func WithConditions(sql string, conds []string) (string, error) {
	tree, err := pg.Parse(sql)
	if err != nil {
		return "", err
	}
	if len(tree.Stmts) != 1 {
		return "", fmt.Errorf("query is not one statement")
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || sel.Op != pg.SetOperation_SETOP_NONE || sel.ValuesLists != nil {
		return "", fmt.Errorf("query is not a plain SELECT")
	}
	// One flat AND, as PostgreSQL's parser builds it from the deparsed
	// text, lest faithful take the nesting for another query.
	args := conjuncts(sel.WhereClause)
	for _, c := range conds {
		ct, err := pg.Parse("SELECT WHERE " + c)
		if err != nil || len(ct.Stmts) != 1 {
			return "", fmt.Errorf("condition %q does not parse: %v", c, err)
		}
		cs := ct.Stmts[0].Stmt.GetSelectStmt()
		if cs == nil || cs.WhereClause == nil {
			return "", fmt.Errorf("condition %q is not an expression", c)
		}
		args = append(args, conjuncts(cs.WhereClause)...)
	}
	if len(args) == 1 {
		sel.WhereClause = args[0]
	} else {
		sel.WhereClause = pg.MakeBoolExprNode(pg.BoolExprType_AND_EXPR, args, -1)
	}
	return faithful(tree)
}

// faithful deparses tree, and returns the text only when it parses back to
// the same tree. pg_query's deparser is not exact (it prints some quoted
// names bare, drops parentheses that matter), and a text that read
// otherwise would run SQL lint never read: a quoted alias holding
// "UNION ALL SELECT … FROM victim --" would become part of the query.
func faithful(tree *pg.ParseResult) (string, error) {
	out, err := pg.Deparse(tree)
	if err != nil {
		return "", err
	}
	back, err := pg.Parse(out)
	if err != nil {
		return "", err
	}
	if !proto.Equal(withoutLocations(tree), withoutLocations(back)) {
		return "", fmt.Errorf("the query does not deparse to itself")
	}
	return out, nil
}

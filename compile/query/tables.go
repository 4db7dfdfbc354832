package query

import (
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// cteDef is one WITH item.
type cteDef struct {
	name string
	node *pg.CommonTableExpr
	// query is the body; nil when it is not a SELECT (then the statement is
	// rejected as data-modifying before anything reads this).
	query *pg.SelectStmt
	// recursive: the item is in a WITH RECURSIVE list. Its body may refer
	// to itself, so rwc does not trace into it.
	recursive bool
	// refs counts references from FROM clauses: PostgreSQL inlines a CTE
	// (and so pushes predicates into it) only when it is referenced once.
	refs int
}

// inlined reports whether PostgreSQL plans the CTE as a subquery, which is
// what lets a predicate on its output reach the tables inside.
func (d *cteDef) inlined() bool {
	switch d.node.GetCtematerialized() {
	case pg.CTEMaterialize_CTEMaterializeAlways:
		return false
	case pg.CTEMaterialize_CTEMaterializeNever:
		return !d.recursive
	}
	return !d.recursive && d.refs <= 1
}

// cteEnv is the set of CTE names visible at a point of the query: a chain,
// innermost first, so that shadowing works as in PostgreSQL.
type cteEnv struct {
	parent *cteEnv
	defs   map[string]*cteDef
}

func (e *cteEnv) lookup(name string) *cteDef {
	for ; e != nil; e = e.parent {
		if d, ok := e.defs[name]; ok {
			return d
		}
	}
	return nil
}

// cteFor returns the CTE an unqualified FROM name refers to, if any.
func (e *cteEnv) cteFor(rv *pg.RangeVar) *cteDef {
	if rv.GetSchemaname() != "" || rv.GetCatalogname() != "" {
		return nil
	}
	return e.lookup(rv.GetRelname())
}

// collect walks the whole statement once: it records every base table,
// the CTE scope inside every SELECT (envOf), CTE reference counts, and the
// first construct that makes the statement more than a query.
func (a *analyzer) collect(m protoreflect.Message, env *cteEnv) {
	walk(m, 0, func(x protoreflect.Message) bool {
		switch v := x.Interface().(type) {
		case *pg.SelectStmt:
			a.collectSelect(v, env)
			return false
		case *pg.RangeVar:
			if d := env.cteFor(v); d != nil {
				d.refs++
			} else {
				a.tables = append(a.tables, tableRef(v))
			}
			return false
		case *pg.LockingClause:
			// FOR UPDATE OF names FROM items, not tables.
			return false
		case *pg.IntoClause:
			a.reject(nodeOffsetOf(v.GetRel()), "SELECT INTO creates a table; a source query must be a plain SELECT")
			return false
		case *pg.InsertStmt, *pg.UpdateStmt, *pg.DeleteStmt, *pg.MergeStmt:
			a.reject(a.cteOffset, "a data-modifying statement in WITH changes data; a source query must only read")
			return false
		}
		return true
	})
}

// collectSelect handles a SELECT's WITH clause before the rest, because the
// CTE names it defines hide tables of the same name in its FROM clauses.
func (a *analyzer) collectSelect(s *pg.SelectStmt, env *cteEnv) {
	inner := env
	if w := s.GetWithClause(); w != nil {
		var defs []*cteDef
		for _, n := range w.GetCtes() {
			c := n.GetCommonTableExpr()
			if c == nil {
				continue
			}
			d := &cteDef{name: c.GetCtename(), node: c, query: c.GetCtequery().GetSelectStmt(), recursive: w.GetRecursive()}
			a.ctes[c] = d
			defs = append(defs, d)
		}
		if w.GetRecursive() {
			// WITH RECURSIVE: every item sees every item.
			inner = &cteEnv{parent: env, defs: map[string]*cteDef{}}
			for _, d := range defs {
				inner.defs[d.name] = d
			}
			for _, d := range defs {
				a.collectCTE(d, inner)
			}
		} else {
			// Otherwise each item sees only the ones before it.
			for _, d := range defs {
				a.collectCTE(d, inner)
				inner = &cteEnv{parent: inner, defs: map[string]*cteDef{d.name: d}}
			}
		}
	}
	a.envOf[s] = inner
	walkChildren(s.ProtoReflect(), 0, func(x protoreflect.Message) bool {
		a.collect(x, inner)
		return false
	}, "with_clause")
}

// collectCTE walks a CTE body; cteOffset lets a data-modifying body be
// reported at its WITH item.
func (a *analyzer) collectCTE(d *cteDef, env *cteEnv) {
	a.cteOffset = int(d.node.GetLocation())
	a.collect(d.node.GetCtequery().ProtoReflect(), env)
}

// reject records the first reason the statement is not a plain query.
func (a *analyzer) reject(offset int, msg string) {
	if a.notSelect == nil {
		a.notSelect = &SyntaxError{Offset: offset, Message: msg, Reason: ReasonNotSelect}
	}
}

func tableRef(rv *pg.RangeVar) TableRef {
	return TableRef{
		Schema: rv.GetSchemaname(),
		Name:   rv.GetRelname(),
		Alias:  rv.GetAlias().GetAliasname(),
		Offset: int(rv.GetLocation()),
	}
}

func nodeOffsetOf(rv *pg.RangeVar) int {
	if rv == nil {
		return -1
	}
	return int(rv.GetLocation())
}

// byOffset returns refs ordered by position in the query.
func byOffset(refs []TableRef) []TableRef {
	sorted := append([]TableRef(nil), refs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
	return sorted
}

// distinctTables deduplicates by schema and name, keeping the first
// occurrence, ordered by position in the query.
func distinctTables(refs []TableRef) []TableRef {
	sorted := byOffset(refs)
	type key struct{ schema, name string }
	seen := map[key]bool{}
	var out []TableRef
	for _, t := range sorted {
		k := key{t.Schema, t.Name}
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}

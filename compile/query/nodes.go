package query

import (
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// maxDepth bounds every recursion over the tree. The tree has no cycles and
// protobuf decoding already refuses nesting deeper than 10000, so this is a
// belt for the braces: it must stay above any real query's depth (a long
// `a || b || …` chain nests one level per operator), because a walk that
// stopped early would miss tables.
const maxDepth = 10000

// walk visits every protobuf message under m, depth first. visit returns
// false to skip a message's children. The pg_query tree is protobuf, so one
// reflective walk covers all ~270 node types and cannot miss a new one.
// Field order is not guaranteed; callers that care sort afterwards.
func walk(m protoreflect.Message, depth int, visit func(protoreflect.Message) bool) {
	if depth > maxDepth || !m.IsValid() || !visit(m) {
		return
	}
	walkChildren(m, depth, visit)
}

// walkChildren walks the children of m, skipping fields named in skip.
func walkChildren(m protoreflect.Message, depth int, visit func(protoreflect.Message) bool, skip ...protoreflect.Name) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() || slices.Contains(skip, fd.Name()) {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walk(l.Get(i).Message(), depth+1, visit)
			}
			return true
		}
		walk(v.Message(), depth+1, visit)
		return true
	})
}

// walkExpr visits the nodes of an expression at its own query level: it
// does not enter subqueries (SubLink), whose aggregates, windows and column
// references belong to them.
func walkExpr(n *pg.Node, visit func(*pg.Node) bool) {
	if n == nil {
		return
	}
	walk(n.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		switch v := m.Interface().(type) {
		case *pg.SubLink:
			// The test expression (`x IN (…)`'s x) is at this level.
			walkExpr(v.GetTestexpr(), visit)
			return false
		case *pg.SelectStmt, *pg.RangeSubselect:
			return false
		case *pg.Node:
			return visit(v)
		}
		return true
	})
}

// sameExpr compares two expressions ignoring token locations, the only
// thing that differs between two spellings of the same expression in a
// raw parse tree.
func sameExpr(a, b *pg.Node) bool {
	if a == nil || b == nil {
		return false
	}
	return proto.Equal(withoutLocations(a), withoutLocations(b))
}

// withoutLocations returns a copy of m with every location field cleared.
func withoutLocations[M proto.Message](m M) M {
	c := proto.Clone(m).(M)
	clearLocations(c.ProtoReflect(), 0)
	return c
}

func clearLocations(m protoreflect.Message, depth int) {
	if depth > maxDepth {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "location" || fd.Name() == "stmt_location" || fd.Name() == "stmt_len":
			m.Clear(fd)
		case fd.Message() == nil || fd.IsMap():
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message(), depth+1)
			}
		default:
			clearLocations(v.Message(), depth+1)
		}
		return true
	})
}

// conjuncts flattens a chain of ANDs.
func conjuncts(n *pg.Node) []*pg.Node {
	if n == nil {
		return nil
	}
	if b := n.GetBoolExpr(); b != nil && b.GetBoolop() == pg.BoolExprType_AND_EXPR {
		var out []*pg.Node
		for _, a := range b.GetArgs() {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*pg.Node{n}
}

// columnEquality returns the two column references of `a = b` or
// `a IS NOT DISTINCT FROM b`. Both keep a range predicate equivalent: rows
// where they differ or are NULL are gone either way. Anything wrapped (a
// cast, a function) is not an equality of values rwc can reason about.
func columnEquality(n *pg.Node) (l, r *pg.ColumnRef, ok bool) {
	e := n.GetAExpr()
	if e == nil {
		return nil, nil, false
	}
	switch e.GetKind() {
	case pg.A_Expr_Kind_AEXPR_OP:
		names, good := stringList(e.GetName())
		if !good || len(names) == 0 || names[len(names)-1] != "=" || (len(names) == 2 && names[0] != "pg_catalog") || len(names) > 2 {
			return nil, nil, false
		}
	case pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
	default:
		return nil, nil, false
	}
	l, r = e.GetLexpr().GetColumnRef(), e.GetRexpr().GetColumnRef()
	return l, r, l != nil && r != nil
}

// isStar reports whether a target expression is `*`, `t.*` or `(x).*`.
func isStar(n *pg.Node) bool {
	if c := n.GetColumnRef(); c != nil {
		f := c.GetFields()
		return len(f) > 0 && f[len(f)-1].GetAStar() != nil
	}
	if ind := n.GetAIndirection(); ind != nil {
		f := ind.GetIndirection()
		return len(f) > 0 && f[len(f)-1].GetAStar() != nil
	}
	return false
}

// nodeLocation is the location of the node's own token, or -1.
func nodeLocation(n *pg.Node) int {
	if n == nil {
		return -1
	}
	m := n.ProtoReflect()
	loc := -1
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		inner := v.Message()
		if f := inner.Descriptor().Fields().ByName("location"); f != nil {
			loc = int(inner.Get(f).Int())
		}
		return false
	})
	return loc
}

package compile

import (
	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
)

// pushdown reports where rwc cannot apply the predicate to a source: then
// that source is read in full on every refresh, and incremental refresh
// cannot narrow it (CANNOT_PUSH_PREDICATE).
func pushdown(f *Flow) diag.List {
	var ds diag.List
	t, a := f.Table, f.Query
	for _, col := range f.Predicate.Columns {
		l := a.Lineage(col)
		if !l.Found || l.FromStar {
			continue
		}
		at := t.Query.Pos
		for _, c := range a.Columns {
			if c.Name == col {
				at = t.Query.AtOffset(c.Offset)
			}
		}
		switch l.Kind {
		case query.Aggregate, query.Window, query.Expression:
			hint := "output the source column unchanged (SELECT src." + col + ") so rwc can filter the sources"
			if l.Kind == query.Aggregate || l.Kind == query.Window {
				hint = "put the window on a grouping column (usually a date), not on a computed value"
			}
			ds.Warnf("RW401", at, hint,
				"the predicate column %s is computed in the query (%s): rwc cannot push the predicate into the sources, so they are read in full and refreshes are never incremental (CANNOT_PUSH_PREDICATE)",
				col, kindWord(l.Kind))
			continue
		}
		if a.Aggregates && !l.InGroupBy {
			ds.Warnf("RW402", at, "add "+col+" to GROUP BY",
				"the query aggregates but the predicate column %s is not in GROUP BY: the predicate cannot be pushed below the aggregation (CANNOT_PUSH_PREDICATE)", col)
			continue
		}
		for _, src := range l.NotExposed {
			ds.Warnf("RW403", t.Query.AtOffset(src.Offset),
				"join it on "+col+" if it has one; if it is a small dimension, say so with a comment on that line: -- rwc:nolint RW403",
				"source %s does not expose the predicate column %s through the join: it is read in full on every refresh", tableName(src), col)
		}
	}
	return ds
}

func kindWord(k query.ColumnKind) string {
	switch k {
	case query.Aggregate:
		return "an aggregate"
	case query.Window:
		return "a window function"
	}
	return "an expression"
}

func tableName(t query.TableRef) string {
	if t.Schema != "" {
		return t.Schema + "." + t.Name
	}
	return t.Name
}

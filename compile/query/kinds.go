package query

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// aggregateNames are PostgreSQL's built-in aggregates. Without a catalog a
// user-defined aggregate looks like any function; it is still caught when
// written with DISTINCT, ORDER BY, FILTER, WITHIN GROUP or `*`, which only
// aggregates accept.
var aggregateNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"array_agg": true, "string_agg": true, "bool_and": true, "bool_or": true, "every": true,
	"bit_and": true, "bit_or": true, "bit_xor": true, "any_value": true,
	"json_agg": true, "jsonb_agg": true, "json_agg_strict": true, "jsonb_agg_strict": true,
	"json_object_agg": true, "jsonb_object_agg": true,
	"json_object_agg_strict": true, "jsonb_object_agg_strict": true,
	"json_object_agg_unique": true, "jsonb_object_agg_unique": true,
	"json_object_agg_unique_strict": true, "jsonb_object_agg_unique_strict": true,
	"xmlagg": true, "range_agg": true, "range_intersect_agg": true,
	"stddev": true, "stddev_pop": true, "stddev_samp": true,
	"variance": true, "var_pop": true, "var_samp": true,
	"corr": true, "covar_pop": true, "covar_samp": true,
	"regr_avgx": true, "regr_avgy": true, "regr_count": true, "regr_intercept": true,
	"regr_r2": true, "regr_slope": true, "regr_sxx": true, "regr_sxy": true, "regr_syy": true,
	"mode": true, "percentile_cont": true, "percentile_disc": true,
}

// isAggregateCall reports whether f is an aggregate call at this level (not
// a window call: `sum(x) OVER (…)` is a window function).
func isAggregateCall(f *pg.FuncCall) bool {
	if f.GetOver() != nil {
		return false
	}
	if f.GetAggStar() || f.GetAggDistinct() || f.GetAggFilter() != nil || len(f.GetAggOrder()) > 0 || f.GetAggWithinGroup() {
		return true
	}
	names, ok := stringList(f.GetFuncname())
	if !ok || len(names) == 0 || len(names) > 2 || (len(names) == 2 && names[0] != "pg_catalog") {
		return false
	}
	return aggregateNames[names[len(names)-1]]
}

// exprFlags reports whether an expression contains, at its own level, an
// aggregate call and a window call.
func exprFlags(n *pg.Node) (agg, win bool) {
	walkExpr(n, func(x *pg.Node) bool {
		switch v := x.GetNode().(type) {
		case *pg.Node_FuncCall:
			if v.FuncCall.GetOver() != nil {
				win = true
			} else if isAggregateCall(v.FuncCall) {
				agg = true
			}
		case *pg.Node_JsonObjectAgg:
			if v.JsonObjectAgg.GetConstructor().GetOver() != nil {
				win = true
			} else {
				agg = true
			}
		case *pg.Node_JsonArrayAgg:
			if v.JsonArrayAgg.GetConstructor().GetOver() != nil {
				win = true
			} else {
				agg = true
			}
		}
		return true
	})
	return agg, win
}

// exprKind classifies a target expression. An aggregate anywhere wins over
// a window (`sum(x) - lag(sum(x)) OVER w` is computed from groups).
func exprKind(n *pg.Node) ColumnKind {
	agg, win := exprFlags(n)
	switch {
	case agg:
		return Aggregate
	case win:
		return Window
	case n.GetColumnRef() != nil && !isStar(n):
		return Plain
	}
	return Expression
}

// windowDefs returns the window definitions of every window call in n.
func windowDefs(n *pg.Node) []*pg.WindowDef {
	var out []*pg.WindowDef
	walkExpr(n, func(x *pg.Node) bool {
		switch v := x.GetNode().(type) {
		case *pg.Node_FuncCall:
			if w := v.FuncCall.GetOver(); w != nil {
				out = append(out, w)
			}
		case *pg.Node_JsonObjectAgg:
			if w := v.JsonObjectAgg.GetConstructor().GetOver(); w != nil {
				out = append(out, w)
			}
		case *pg.Node_JsonArrayAgg:
			if w := v.JsonArrayAgg.GetConstructor().GetOver(); w != nil {
				out = append(out, w)
			}
		}
		return true
	})
	return out
}

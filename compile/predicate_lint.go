package compile

import (
	"strings"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// example is a column to show in a predicate's hint.
func example(f *Flow) string {
	if f.PartitionBy != "" {
		return f.PartitionBy
	}
	return "event_date"
}

func predicateWarnings(f *Flow) diag.List {
	var ds diag.List
	t, p := f.Table, f.Predicate
	if p.Determinism == predicate.NonDeterministic {
		ds.Errorf("RW211", t.ReplaceWhere.Pos, "use a predicate on the table's columns and fixed or temporal values, e.g. "+example(f)+" >= date_add(current_date(), -7)",
			"the window uses rand(): a refresh's DELETE and its INSERT each evaluate it and would draw differently, deleting rows it does not insert again and inserting rows it did not delete")
	}
	if cols := movingUpperBounds(p.Root, false); len(cols) > 0 {
		ds.Warnf("RW212", t.ReplaceWhere.Pos, "bound the window from below only, e.g. "+cols[0]+" >= date_add(current_date(), -7); rows newer than today are then inside it anyway",
			"the window's upper bound on %s moves with time: each day's window includes rows the previous one excluded, so refreshes fall back to a full window recompute (STALE_TARGET_DATA_IN_WINDOW)", joinNames(cols))
	}
	return ds
}

// movingUpperBounds lists columns whose upper bound depends on the refresh
// time: col <= current_date(), col == current_date(), and their mirrors
// under negation. A lower bound that moves only narrows the window; an upper
// bound that moves widens it.
func movingUpperBounds(e *predicate.Expr, negated bool) []string {
	var out []string
	switch e.Op {
	case predicate.OpNot:
		return movingUpperBounds(e.Args[0], !negated)
	case predicate.OpAnd, predicate.OpOr:
		for _, a := range e.Args {
			out = append(out, movingUpperBounds(a, negated)...)
		}
	case predicate.OpLt, predicate.OpLe, predicate.OpGt, predicate.OpGe, predicate.OpEq, predicate.OpNe, predicate.OpIn:
		col, val, op := e.Args[0], e.Args[1], e.Op
		if e.Op == predicate.OpIn {
			return nil
		}
		if col.Op != predicate.OpCol {
			col, val, op = val, col, predicate.Mirror(op)
		}
		if col.Op != predicate.OpCol || !temporal(val) {
			return nil
		}
		if negated {
			op = predicate.Negate(op)
		}
		if op == predicate.OpLt || op == predicate.OpLe || op == predicate.OpEq {
			out = append(out, col.Col.Name)
		}
	}
	return dedupe(out)
}

func temporal(e *predicate.Expr) bool {
	found := false
	for _, x := range append([]*predicate.Expr{e}, e.Args...) {
		if x.Op == predicate.OpCurrentDate || x.Op == predicate.OpCurrentTimestamp || (x.Op == predicate.OpDateAdd && temporal(x.Args[0])) {
			found = true
		}
	}
	return found
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func joinNames(s []string) string { return strings.Join(s, ", ") }

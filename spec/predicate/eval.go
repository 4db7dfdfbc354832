package predicate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Resolve fixes per-refresh functions at rc: current_date() becomes a date
// literal, current_timestamp() a timestamp literal. The result is what a
// refresh stores and what its SQL is rendered from.
func (p *Predicate) Resolve(rc Resolution) (*Predicate, error) {
	if p.Determinism == Immutable {
		return p, nil // nothing to resolve (a predicate calling rand() may call current_date() too)
	}
	p.mu.Lock()
	q, ok := p.resolved[rc]
	p.mu.Unlock()
	if ok {
		return q, nil
	}
	root, err := p.Root.resolve(rc)
	if err != nil {
		return nil, err
	}
	q, issues := Compile(root.CEL(), columnsOf(p))
	if len(issues) > 0 {
		// The printer only writes constructs the compiler accepts.
		return nil, fmt.Errorf("internal: resolved predicate %q does not compile: %s", root.CEL(), issues[0].Message)
	}
	// A plan and a refresh resolve the same predicate at one instant many
	// times; compiling it costs far more than the lookup.
	p.mu.Lock()
	if p.resolved == nil || len(p.resolved) >= 16 {
		p.resolved = map[Resolution]*Predicate{}
	}
	p.resolved[rc] = q
	p.mu.Unlock()
	return q, nil
}

func columnsOf(p *Predicate) []Column {
	var cols []Column
	seen := map[string]bool{}
	p.Root.walk(func(x *Expr) {
		if x.Op == OpCol && !seen[x.Col.Name] {
			seen[x.Col.Name] = true
			cols = append(cols, *x.Col)
		}
	})
	return cols
}

// Value is a column value for Eval: nil is SQL NULL; otherwise int64,
// float64, string, bool, Date or time.Time.
type Value = any

// Eval reports whether a row is in the window, evaluated by CEL in Go with
// per-refresh functions read from rc. A NULL column is left unbound; CEL then
// yields an error for any comparison with it, which && and || absorb exactly
// as SQL's three-valued logic absorbs NULL, and which is "not in the window"
// at the top, as NULL is for WHERE.
func (p *Predicate) Eval(row map[string]Value, rc Resolution) (bool, error) {
	out, err := p.eval(row, rc)
	return out == types.True, err
}

// Violates reports whether a row fails p as a check (an expectation's
// check:): p is false on it. A NULL at the top is no failure, as for a
// CHECK constraint; ViolationSQL is the same in PostgreSQL.
func (p *Predicate) Violates(row map[string]Value, rc Resolution) (bool, error) {
	out, err := p.eval(row, rc)
	return out == types.False, err
}

// ViolationSQL is the condition, in PostgreSQL, of a row that Violates the
// predicate whose SQL is sql: NOT keeps NULL NULL, which WHERE and FILTER
// leave out.
func ViolationSQL(sql string) string { return "NOT " + sql }

// eval is the predicate's value on row: types.True, types.False, or nil
// for NULL (a NULL column reached the top).
func (p *Predicate) eval(row map[string]Value, rc Resolution) (ref.Val, error) {
	prg, err := p.program(rc)
	if err != nil {
		return nil, err
	}
	act := map[string]any{}
	for k, v := range row {
		if v != nil {
			act[k] = v
		}
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		if strings.Contains(err.Error(), "no such attribute") {
			return nil, nil // a NULL reached the top
		}
		return nil, err
	}
	if b, ok := out.(types.Bool); ok {
		return b, nil
	}
	return nil, nil
}

// program returns the CEL program bound to rc's per-refresh values,
// building it once per resolution: planning a program costs far more than
// evaluating it.
func (p *Predicate) program(rc Resolution) (cel.Program, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prg, ok := p.programs[rc]; ok {
		return prg, nil
	}
	prg, err := p.env.Program(p.checked,
		cel.CostLimit(maxEvalCost),
		// The clock is bound per program, not per environment as
		// cel.Function would: one environment serves every refresh.
		//lint:ignore SA1019 no replacement binds an overload per program
		cel.Functions(
			&functions.Overload{Operator: "current_date", Function: func(...ref.Val) ref.Val {
				return DateOf(rc.Now.In(rc.loc()))
			}},
			&functions.Overload{Operator: "current_timestamp", Function: func(...ref.Val) ref.Val {
				return types.Timestamp{Time: rc.Now.UTC().Truncate(time.Microsecond)}
			}},
			&functions.Overload{Operator: "rand", Function: func(...ref.Val) ref.Val { return types.Double(rand.Float64()) }},
		))
	if err != nil {
		return nil, err
	}
	if p.programs == nil || len(p.programs) >= 16 {
		p.programs = map[Resolution]cel.Program{}
	}
	p.programs[rc] = prg
	return prg, nil
}

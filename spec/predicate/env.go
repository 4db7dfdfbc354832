package predicate

import (
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// EnvVersion names the language accepted here. A stored predicate records
// the version it was compiled with; a later rwc that grows the language keeps
// a builder for every earlier version so old predicates still compile alike.
const EnvVersion = 1

// Limits keep a hostile or accidental predicate from costing much: they are
// far beyond any real window predicate.
const (
	maxExprSize   = 4096
	maxRecursion  = 48
	maxEvalCost   = 10000
	maxDateOffset = 3_000_000 // days; PostgreSQL's date + integer stays in range
)

var (
	baseEnvOnce sync.Once
	baseEnv     *cel.Env
	baseEnvErr  error
)

// base is the environment without table columns, built once.
func base() (*cel.Env, error) {
	baseEnvOnce.Do(func() { baseEnv, baseEnvErr = buildEnv(EnvVersion) })
	return baseEnv, baseEnvErr
}

func buildEnv(version int) (*cel.Env, error) {
	if version != 1 {
		return nil, fmt.Errorf("predicate language version %d is unknown to this rwc (it knows 1..%d)", version, EnvVersion)
	}
	dateT := DateType
	// Date comparisons are declared for the checker only: at run time the
	// standard library's comparison calls Date.Compare (see DateType).
	cmp := func(name, id string) cel.EnvOption {
		return cel.Function(name, cel.Overload(id+"_date", []*cel.Type{dateT, dateT}, cel.BoolType))
	}
	return cel.NewEnv(
		cel.ClearMacros(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(maxExprSize),
		cel.ParserRecursionLimit(maxRecursion),
		cel.Types(DateType),
		cmp(operators.Less, "less"),
		cmp(operators.LessEquals, "less_equals"),
		cmp(operators.Greater, "greater"),
		cmp(operators.GreaterEquals, "greater_equals"),
		cel.Function("date", cel.Overload("date_string", []*cel.Type{cel.StringType}, dateT,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				d, err := ParseDate(string(v.(types.String)))
				if err != nil {
					return types.NewErr("%v", err)
				}
				return d
			}))),
		cel.Function("date_add", cel.Overload("date_add_date_int", []*cel.Type{dateT, cel.IntType}, dateT,
			cel.BinaryBinding(func(d, n ref.Val) ref.Val { return addDays(d, int64(n.(types.Int))) }))),
		cel.Function("date_sub", cel.Overload("date_sub_date_int", []*cel.Type{dateT, cel.IntType}, dateT,
			cel.BinaryBinding(func(d, n ref.Val) ref.Val { return addDays(d, -int64(n.(types.Int))) }))),
		// Per-refresh and random functions get their bindings per evaluation
		// (see Eval): their values belong to a refresh, not to the environment.
		cel.Function("current_date", cel.Overload("current_date", nil, dateT)),
		cel.Function("current_timestamp", cel.Overload("current_timestamp", nil, cel.TimestampType)),
		cel.Function("rand", cel.Overload("rand", nil, cel.DoubleType)),
	)
}

func addDays(d ref.Val, n int64) ref.Val {
	r, err := d.(Date).AddDays(n)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return r
}

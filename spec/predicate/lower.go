package predicate

import (
	"sort"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// comparisons maps the checker's resolved overloads to ops. Only overloads
// listed here (or handled in lower) reach the Expr tree: a new overload in a
// future cel-go is rejected, not silently translated.
var comparisons = map[string]Op{}

func init() {
	for prefix, op := range map[string]Op{"less": OpLt, "less_equals": OpLe, "greater": OpGt, "greater_equals": OpGe} {
		for _, suffix := range []string{"bool", "int64", "int64_double", "double", "double_int64", "string", "timestamp", "date"} {
			comparisons[prefix+"_"+suffix] = op
		}
	}
}

// typeLiterals makes `date >= '2026-01-01'` mean date >= date('2026-01-01'):
// a string literal compared with a date expression becomes a date literal,
// validated like one. Only date-returning expressions qualify, so a text
// column compared with the same string stays a string comparison.
func (c *compiler) typeLiterals(e ast.Expr) {
	if e.Kind() == ast.ListKind {
		for _, el := range e.AsList().Elements() {
			c.typeLiterals(el)
		}
	}
	if e.Kind() != ast.CallKind {
		return
	}
	call := e.AsCall()
	args := call.Args()
	switch call.FunctionName() {
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if len(args) == 2 {
			c.typeLiteral(args[0], args[1])
			c.typeLiteral(args[1], args[0])
		}
	case operators.In:
		if len(args) == 2 && args[1].Kind() == ast.ListKind {
			for _, el := range args[1].AsList().Elements() {
				c.typeLiteral(args[0], el)
			}
		}
	}
	if call.IsMemberFunction() {
		c.typeLiterals(call.Target())
	}
	for _, a := range args {
		c.typeLiterals(a)
	}
}

// typeLiteral gives lit the type of its peer where a user would expect it:
// an ISO string next to a date is a date, an integer next to a double
// column is a double (price == 10).
func (c *compiler) typeLiteral(peer, lit ast.Expr) {
	switch {
	case c.isDateExpr(peer):
		c.wrapDate(lit)
	case c.isDoubleColumn(peer) && lit.Kind() == ast.LiteralKind:
		if n, ok := lit.AsLiteral().(types.Int); ok {
			lit.SetKindCase(ast.NewExprFactory().NewLiteral(lit.ID(), types.Double(n)))
		}
	}
}

func (c *compiler) isDoubleColumn(e ast.Expr) bool {
	if e.Kind() != ast.IdentKind {
		return false
	}
	col, ok := c.cols[e.AsIdent()]
	return ok && celType(col.Type.Family) == cel.DoubleType
}

func (c *compiler) isDateExpr(e ast.Expr) bool {
	switch e.Kind() {
	case ast.IdentKind:
		col, ok := c.cols[e.AsIdent()]
		return ok && celType(col.Type.Family) == DateType
	case ast.CallKind:
		switch e.AsCall().FunctionName() {
		case "date", "date_add", "date_sub", "current_date":
			return true
		}
	}
	return false
}

func (c *compiler) wrapDate(e ast.Expr) {
	if e.Kind() != ast.LiteralKind {
		return
	}
	s, ok := e.AsLiteral().(types.String)
	if !ok {
		return
	}
	id := c.maxID() + 1
	if r, ok := c.info.GetOffsetRange(e.ID()); ok {
		c.info.SetOffsetRange(id, r)
	}
	fac := ast.NewExprFactory()
	e.SetKindCase(fac.NewCall(e.ID(), "date", fac.NewLiteral(id, s)))
}

func (c *compiler) maxID() int64 {
	var m int64
	for id := range c.parsed.IDs() {
		m = max(m, id)
	}
	for id := range c.info.OffsetRanges() {
		m = max(m, id)
	}
	return m
}

// lower turns the checked CEL tree into an Expr, dispatching on the overload
// the checker resolved.
func (c *compiler) lower(a *ast.AST, e ast.Expr) *Expr {
	at := c.loc(e.ID())
	kind, ok := kindOf(a.GetType(e.ID()))
	if !ok {
		c.errAt(at, "RW203", "", "values of type %s are not supported in a window predicate", a.GetType(e.ID()))
		return nil
	}
	switch e.Kind() {
	case ast.IdentKind:
		col := c.cols[e.AsIdent()]
		return &Expr{Op: OpCol, Kind: kind, Col: &col, At: at}
	case ast.LiteralKind:
		return c.literal(e, kind, at)
	case ast.CallKind:
	default:
		c.errAt(at, "RW204", "supported: "+supportedList, "this construct is not supported in a window predicate")
		return nil
	}
	call := e.AsCall()
	ids := a.GetOverloadIDs(e.ID())
	if len(ids) != 1 {
		c.errAt(at, "RW203", "compare values of one type", "%s cannot be resolved to one meaning here", displayFn(call.FunctionName()))
		return nil
	}
	args := call.Args()
	if call.IsMemberFunction() {
		args = append([]ast.Expr{call.Target()}, args...)
	}
	sub := func() []*Expr {
		out := make([]*Expr, len(args))
		for i, x := range args {
			if out[i] = c.lower(a, x); out[i] == nil {
				return nil
			}
		}
		return out
	}
	node := func(op Op) *Expr {
		xs := sub()
		if xs == nil {
			return nil
		}
		return &Expr{Op: op, Kind: kind, Args: xs, At: at}
	}
	id := ids[0]
	if op, ok := comparisons[id]; ok {
		return node(op)
	}
	switch id {
	case "logical_and":
		return node(OpAnd)
	case "logical_or":
		return node(OpOr)
	case "logical_not":
		return node(OpNot)
	case "equals", "not_equals":
		if id == "equals" {
			return node(OpEq)
		}
		return node(OpNe)
	case "starts_with_string":
		return node(OpStartsWith)
	case "ends_with_string":
		return node(OpEndsWith)
	case "contains_string":
		return node(OpContains)
	case "in_list":
		return c.lowerIn(a, args, at)
	case "current_date":
		return &Expr{Op: OpCurrentDate, Kind: KDate, At: at}
	case "current_timestamp":
		return &Expr{Op: OpCurrentTimestamp, Kind: KTimestamp, At: at}
	case "rand":
		return &Expr{Op: OpRand, Kind: KDouble, At: at}
	case "date_string":
		s, ok := c.stringLiteral(args[0], "date() takes a literal 'YYYY-MM-DD'")
		if !ok {
			return nil
		}
		d, err := ParseDate(s)
		if err != nil {
			c.errAt(c.loc(args[0].ID()), "RW205", "write dates as 'YYYY-MM-DD', e.g. '2026-01-31'", "%v", err)
			return nil
		}
		return lit(KDate, d, at)
	case "string_to_timestamp":
		s, ok := c.stringLiteral(args[0], "timestamp() takes a literal RFC 3339 instant, e.g. '2026-01-31T00:00:00Z'")
		if !ok {
			return nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 1 || t.Year() > 9999 {
			c.errAt(c.loc(args[0].ID()), "RW205", "write instants in RFC 3339 with a zone, e.g. '2026-01-31T00:00:00Z'", "%q is not an RFC 3339 timestamp", s)
			return nil
		}
		if t.Nanosecond()%1000 != 0 {
			c.errAt(c.loc(args[0].ID()), "RW205", "PostgreSQL keeps microseconds; drop the extra digits", "%q is more precise than a microsecond", s)
			return nil
		}
		return lit(KTimestamp, t.UTC(), at)
	case "date_add_date_int", "date_sub_date_int":
		n, ok := c.intLiteral(args[1])
		if !ok {
			return nil
		}
		if id == "date_sub_date_int" {
			n = -n
		}
		d := c.lower(a, args[0])
		if d == nil {
			return nil
		}
		if d.Op == OpLit {
			r, err := d.Val.(Date).AddDays(n)
			if err != nil {
				c.errAt(at, "RW205", "", "%v", err)
				return nil
			}
			return lit(KDate, r, at)
		}
		return &Expr{Op: OpDateAdd, Kind: KDate, Args: []*Expr{d}, N: n, At: at}
	}
	c.errAt(at, "RW203", "supported: "+supportedList, "%s is not supported for these types (%s)", displayFn(call.FunctionName()), strings.ReplaceAll(id, "_", " "))
	return nil
}

func (c *compiler) lowerIn(a *ast.AST, args []ast.Expr, at Loc) *Expr {
	x := c.lower(a, args[0])
	if x == nil {
		return nil
	}
	if args[1].Kind() != ast.ListKind {
		c.errAt(c.loc(args[1].ID()), "RW208", "write the values out: x in ['a', 'b']", "in takes a list literal")
		return nil
	}
	els := args[1].AsList().Elements()
	if len(els) == 0 {
		c.errAt(c.loc(args[1].ID()), "RW210", "list at least one value; an empty list selects nothing", "empty list after in")
		return nil
	}
	out := &Expr{Op: OpIn, Kind: KBool, Args: []*Expr{x}, At: at}
	for _, el := range els {
		v := c.lower(a, el)
		if v == nil {
			return nil
		}
		if v.Op != OpLit || v.Kind != x.Kind {
			c.errAt(c.loc(el.ID()), "RW208", "list elements are literals of the same type as the left side", "list element is not a %s literal", x.Kind)
			return nil
		}
		out.Args = append(out.Args, v)
	}
	return out
}

func (c *compiler) literal(e ast.Expr, kind Kind, at Loc) *Expr {
	switch v := e.AsLiteral().(type) {
	case types.Bool:
		return lit(KBool, bool(v), at)
	case types.Int:
		return lit(KInt, int64(v), at)
	case types.Double:
		return lit(KDouble, float64(v), at)
	case types.String:
		if strings.ContainsRune(string(v), 0) {
			c.errAt(at, "RW205", "PostgreSQL text cannot hold NUL; remove \\x00", "string literal contains a NUL character")
			return nil
		}
		return lit(KString, string(v), at)
	}
	c.errAt(at, "RW204", "use int, double, string or bool literals", "literal %v of type %s is not supported in a window predicate", e.AsLiteral(), kind)
	return nil
}

func (c *compiler) stringLiteral(e ast.Expr, hint string) (string, bool) {
	if e.Kind() == ast.LiteralKind {
		if s, ok := e.AsLiteral().(types.String); ok {
			return string(s), true
		}
	}
	c.errAt(c.loc(e.ID()), "RW208", hint, "argument must be a string literal")
	return "", false
}

func (c *compiler) intLiteral(e ast.Expr) (int64, bool) {
	if e.Kind() == ast.LiteralKind {
		if n, ok := e.AsLiteral().(types.Int); ok {
			if n > maxDateOffset || n < -maxDateOffset {
				c.errAt(c.loc(e.ID()), "RW205", "use an offset of at most 3,000,000 days", "day offset %d is out of range", n)
				return 0, false
			}
			return int64(n), true
		}
	}
	c.errAt(c.loc(e.ID()), "RW208", "write the number of days as an integer literal: date_add(date, -7)", "the day offset must be an integer literal")
	return 0, false
}

// columns lists the distinct column names e reads, sorted.
func (e *Expr) columns() []string {
	seen := map[string]bool{}
	var out []string
	e.walk(func(x *Expr) {
		if x.Op == OpCol && !seen[x.Col.Name] {
			seen[x.Col.Name] = true
			out = append(out, x.Col.Name)
		}
	})
	sort.Strings(out)
	return out
}

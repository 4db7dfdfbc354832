package query

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// ExprKind is what a scalar expression is, as PostgreSQL's parser reads it.
type ExprKind int

const (
	// ExprColumn is a column reference: Name, with Qualifier before it.
	ExprColumn ExprKind = iota + 1
	// ExprConst is a literal: Value is int64, string (a numeric's digits
	// are in Text), bool, or nil for NULL.
	ExprConst
	// ExprOp is an operator (Name: "=", "<", "+", …) on one or two Args.
	ExprOp
	ExprAnd
	ExprOr
	ExprNot
	// ExprBetween is Args[0] BETWEEN Args[1] AND Args[2]; Not for NOT BETWEEN.
	ExprBetween
	// ExprIn is Args[0] IN (Args[1:]); Not for NOT IN.
	ExprIn
	// ExprCall is a function call: Name lower-cased (Qualifier its schema).
	ExprCall
	// ExprCast is Args[0] cast to the type Name (DATE '2024-01-01' too).
	ExprCast
	// ExprNullTest is Args[0] IS NULL (Not: IS NOT NULL).
	ExprNullTest
	// ExprValueFunc is SQL's CURRENT_DATE, CURRENT_TIMESTAMP, …: Name
	// lower-cased.
	ExprValueFunc
	// ExprOther is anything else; Name says what, for a message.
	ExprOther
)

// Expr is one node of a scalar expression, in plain Go: the callers that
// translate SQL expressions (rwc import) never see pg_query's types.
type Expr struct {
	Kind      ExprKind
	Name      string
	Qualifier []string
	Args      []*Expr
	Not       bool
	Value     any
	// Text is a numeric literal's digits, as written.
	Text string
	// Offset is the byte offset of the node in the parsed text (-1 when the
	// parser gives none).
	Offset int
}

// ParseExpr parses one scalar expression (a WHERE condition, say) with
// PostgreSQL's parser. Offsets are into text.
func ParseExpr(text string) (*Expr, *SyntaxError) {
	const prefix = "SELECT "
	if strings.IndexByte(text, 0) >= 0 {
		return nil, &SyntaxError{Offset: strings.IndexByte(text, 0), Message: "expression contains a NUL byte", Reason: ReasonSyntax}
	}
	if strings.TrimSpace(text) == "" {
		return nil, &SyntaxError{Offset: -1, Message: "expression is empty", Reason: ReasonEmpty}
	}
	tree, err := pg.Parse(prefix + text)
	if err != nil {
		se := parseError(prefix+text, err)
		if se.Offset >= len(prefix) {
			se.Offset -= len(prefix)
		} else if se.Offset >= 0 {
			se.Offset = 0
		}
		return nil, se
	}
	stmts := tree.GetStmts()
	var sel *pg.SelectStmt
	if len(stmts) == 1 {
		sel = stmts[0].GetStmt().GetSelectStmt()
	}
	if sel == nil || len(sel.GetTargetList()) != 1 || len(sel.GetFromClause()) > 0 || sel.GetWhereClause() != nil ||
		sel.GetGroupClause() != nil || sel.GetSortClause() != nil || sel.GetLimitCount() != nil {
		return nil, &SyntaxError{Offset: 0, Message: "not a single expression", Hint: "write one condition, e.g. date >= '2024-01-01'", Reason: ReasonSyntax}
	}
	rt := sel.GetTargetList()[0].GetResTarget()
	if rt.GetName() != "" {
		return nil, &SyntaxError{Offset: int(rt.GetLocation()) - len(prefix), Message: "not a single expression (it has an alias)", Reason: ReasonSyntax}
	}
	return convertExpr(rt.GetVal(), len(prefix)), nil
}

func convertExpr(n *pg.Node, shift int) *Expr {
	at := func(loc int32) int {
		if loc < 0 {
			return -1
		}
		return int(loc) - shift
	}
	conv := func(ns []*pg.Node) []*Expr {
		out := make([]*Expr, len(ns))
		for i, a := range ns {
			out[i] = convertExpr(a, shift)
		}
		return out
	}
	switch x := n.GetNode().(type) {
	case *pg.Node_ColumnRef:
		fields, ok := stringList(x.ColumnRef.GetFields())
		if !ok || len(fields) == 0 {
			return &Expr{Kind: ExprOther, Name: "a star or an indirection", Offset: at(x.ColumnRef.GetLocation())}
		}
		return &Expr{Kind: ExprColumn, Name: fields[len(fields)-1], Qualifier: fields[:len(fields)-1], Offset: at(x.ColumnRef.GetLocation())}
	case *pg.Node_AConst:
		return constExpr(x.AConst, at(x.AConst.GetLocation()))
	case *pg.Node_AExpr:
		return aExpr(x.AExpr, shift, at(x.AExpr.GetLocation()))
	case *pg.Node_BoolExpr:
		kind := map[pg.BoolExprType]ExprKind{pg.BoolExprType_AND_EXPR: ExprAnd, pg.BoolExprType_OR_EXPR: ExprOr, pg.BoolExprType_NOT_EXPR: ExprNot}[x.BoolExpr.GetBoolop()]
		return &Expr{Kind: kind, Args: conv(x.BoolExpr.GetArgs()), Offset: at(x.BoolExpr.GetLocation())}
	case *pg.Node_FuncCall:
		f := x.FuncCall
		names, _ := stringList(f.GetFuncname())
		if f.GetAggStar() || f.GetAggDistinct() || f.GetOver() != nil || f.GetAggFilter() != nil || len(f.GetAggOrder()) > 0 || len(names) == 0 {
			return &Expr{Kind: ExprOther, Name: "an aggregate or window call", Offset: at(f.GetLocation())}
		}
		return &Expr{Kind: ExprCall, Name: strings.ToLower(names[len(names)-1]), Qualifier: names[:len(names)-1], Args: conv(f.GetArgs()), Offset: at(f.GetLocation())}
	case *pg.Node_TypeCast:
		tn := x.TypeCast.GetTypeName()
		names, _ := stringList(tn.GetNames())
		if len(names) > 1 && names[0] == "pg_catalog" {
			names = names[1:]
		}
		name := strings.Join(names, ".")
		if len(tn.GetTypmods()) > 0 || len(tn.GetArrayBounds()) > 0 {
			name += "(…)"
		}
		return &Expr{Kind: ExprCast, Name: name, Args: []*Expr{convertExpr(x.TypeCast.GetArg(), shift)}, Offset: at(x.TypeCast.GetLocation())}
	case *pg.Node_NullTest:
		return &Expr{Kind: ExprNullTest, Not: x.NullTest.GetNulltesttype() == pg.NullTestType_IS_NOT_NULL,
			Args: []*Expr{convertExpr(x.NullTest.GetArg(), shift)}, Offset: at(x.NullTest.GetLocation())}
	case *pg.Node_SqlvalueFunction:
		name := strings.ToLower(strings.TrimPrefix(x.SqlvalueFunction.GetOp().String(), "SVFOP_"))
		return &Expr{Kind: ExprValueFunc, Name: strings.TrimSuffix(name, "_n"), Offset: at(x.SqlvalueFunction.GetLocation())}
	case *pg.Node_AArrayExpr:
		return &Expr{Kind: ExprOther, Name: "an ARRAY[...] constructor", Offset: at(x.AArrayExpr.GetLocation())}
	case *pg.Node_CaseExpr:
		return &Expr{Kind: ExprOther, Name: "a CASE expression", Offset: at(x.CaseExpr.GetLocation())}
	case *pg.Node_SubLink:
		return &Expr{Kind: ExprOther, Name: "a subquery", Offset: at(x.SubLink.GetLocation())}
	case *pg.Node_BooleanTest:
		return &Expr{Kind: ExprOther, Name: "IS TRUE / IS FALSE / IS UNKNOWN", Offset: at(x.BooleanTest.GetLocation())}
	case *pg.Node_CoalesceExpr:
		return &Expr{Kind: ExprOther, Name: "COALESCE", Offset: at(x.CoalesceExpr.GetLocation())}
	case *pg.Node_ParamRef:
		return &Expr{Kind: ExprOther, Name: "a parameter ($1)", Offset: at(x.ParamRef.GetLocation())}
	}
	return &Expr{Kind: ExprOther, Name: "this construct", Offset: -1}
}

func constExpr(c *pg.A_Const, at int) *Expr {
	e := &Expr{Kind: ExprConst, Offset: at}
	switch {
	case c.GetIsnull():
		e.Value = nil
	case c.GetIval() != nil:
		e.Value = int64(c.GetIval().GetIval())
	case c.GetFval() != nil:
		e.Text = c.GetFval().GetFval()
		e.Value = e.Text
		e.Kind = ExprConst
		e.Name = "numeric"
	case c.GetSval() != nil:
		e.Value = c.GetSval().GetSval()
	case c.GetBoolval() != nil:
		e.Value = c.GetBoolval().GetBoolval()
	case c.GetBsval() != nil:
		return &Expr{Kind: ExprOther, Name: "a bit string", Offset: at}
	}
	return e
}

func aExpr(a *pg.A_Expr, shift, at int) *Expr {
	names, _ := stringList(a.GetName())
	op := strings.Join(names, ".")
	var args []*Expr
	if a.GetLexpr() != nil {
		args = append(args, convertExpr(a.GetLexpr(), shift))
	}
	list := func() []*Expr {
		var out []*Expr
		if l := a.GetRexpr().GetList(); l != nil {
			for _, it := range l.GetItems() {
				out = append(out, convertExpr(it, shift))
			}
		}
		return out
	}
	switch a.GetKind() {
	case pg.A_Expr_Kind_AEXPR_OP:
		if a.GetRexpr() != nil {
			args = append(args, convertExpr(a.GetRexpr(), shift))
		}
		return &Expr{Kind: ExprOp, Name: op, Args: args, Offset: at}
	case pg.A_Expr_Kind_AEXPR_IN:
		return &Expr{Kind: ExprIn, Not: op == "<>", Args: append(args, list()...), Offset: at}
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		return &Expr{Kind: ExprBetween, Not: a.GetKind() == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN, Args: append(args, list()...), Offset: at}
	}
	what := map[pg.A_Expr_Kind]string{
		pg.A_Expr_Kind_AEXPR_LIKE: "LIKE", pg.A_Expr_Kind_AEXPR_ILIKE: "ILIKE", pg.A_Expr_Kind_AEXPR_SIMILAR: "SIMILAR TO",
		pg.A_Expr_Kind_AEXPR_DISTINCT: "IS DISTINCT FROM", pg.A_Expr_Kind_AEXPR_NOT_DISTINCT: "IS NOT DISTINCT FROM",
		pg.A_Expr_Kind_AEXPR_NULLIF: "NULLIF", pg.A_Expr_Kind_AEXPR_OP_ANY: "ANY (...)", pg.A_Expr_Kind_AEXPR_OP_ALL: "ALL (...)",
		pg.A_Expr_Kind_AEXPR_BETWEEN_SYM: "BETWEEN SYMMETRIC", pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM: "NOT BETWEEN SYMMETRIC",
	}[a.GetKind()]
	if what == "" {
		what = fmt.Sprintf("operator kind %d", a.GetKind())
	}
	e := &Expr{Kind: ExprOther, Name: what, Offset: at}
	if a.GetKind() == pg.A_Expr_Kind_AEXPR_LIKE || a.GetKind() == pg.A_Expr_Kind_AEXPR_ILIKE {
		// LIKE keeps its operands: a translator may read simple patterns.
		e.Args = append(args, convertExpr(a.GetRexpr(), shift))
		e.Not = op == "!~~" || op == "!~~*"
	}
	return e
}

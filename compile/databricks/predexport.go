package databricks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// Spark SQL's precedence, loosest first: OR, AND, NOT, comparisons.
const (
	sparkOr = iota + 1
	sparkAnd
	sparkNot
	sparkRel
	sparkPrimary
)

// ExportPredicate writes a compiled predicate in Spark SQL, construct by
// construct from the table. Every IR node has a row, so export is total.
func ExportPredicate(p *predicate.Predicate) (string, error) {
	s, _, err := sparkExpr(p.Root)
	return s, err
}

func sparkWrap(s string, prec, need int) string {
	if prec < need {
		return "(" + s + ")"
	}
	return s
}

func sparkExpr(e *predicate.Expr) (string, int, error) {
	switch e.Op {
	case predicate.OpCol:
		return sparkIdent(e.Col.Name), sparkPrimary, nil
	case predicate.OpLit:
		s, err := sparkLiteral(e.Val)
		return s, sparkPrimary, err
	}
	c, ok := sparkOf(e.Op)
	if !ok {
		return "", 0, fmt.Errorf("internal: no Spark SQL for predicate op %d", e.Op)
	}
	args := make([]string, len(e.Args))
	precs := make([]int, len(e.Args))
	for i, a := range e.Args {
		s, p, err := sparkExpr(a)
		if err != nil {
			return "", 0, err
		}
		args[i], precs[i] = s, p
	}
	switch c.form {
	case infix:
		prec := map[predicate.Op]int{predicate.OpAnd: sparkAnd, predicate.OpOr: sparkOr}[e.Op]
		if prec == 0 {
			prec = sparkRel
		}
		// Comparisons do not chain: both operands of one are primaries.
		need := prec
		if prec == sparkRel {
			need = sparkPrimary
		}
		return sparkWrap(args[0], precs[0], need) + " " + c.spark + " " + sparkWrap(args[1], precs[1], need+b2i(prec != sparkRel)), prec, nil
	case prefix:
		return c.spark + " " + sparkWrap(args[0], precs[0], sparkPrimary), sparkNot, nil
	case inList:
		return sparkWrap(args[0], precs[0], sparkPrimary) + " " + c.spark + " (" + strings.Join(args[1:], ", ") + ")", sparkRel, nil
	case method:
		return c.spark + "(" + args[0] + ", " + args[1] + ")", sparkPrimary, nil
	case niladic:
		return c.spark + "()", sparkPrimary, nil
	case call:
		// date_add(d, n): the IR keeps n out of Args.
		return c.spark + "(" + args[0] + ", " + strconv.FormatInt(e.N, 10) + ")", sparkPrimary, nil
	}
	return "", 0, fmt.Errorf("internal: construct form %d", c.form)
}

func sparkLiteral(v any) (string, error) {
	switch v := v.(type) {
	case bool:
		return strings.ToUpper(strconv.FormatBool(v)), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		// A double literal: Spark reads 1.5 as a DECIMAL and 1.5E0 as a
		// DOUBLE; the comparison with a double column is the same either
		// way, and the E form is exact for every float64.
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, "eE") {
			if !strings.Contains(s, ".") {
				s += ".0"
			}
			s += "E0"
		}
		return s, nil
	case string:
		return sparkString(v), nil
	case predicate.Date:
		return "DATE'" + v.String() + "'", nil
	case time.Time:
		return "TIMESTAMP'" + v.UTC().Format("2006-01-02 15:04:05.999999") + "Z'", nil
	}
	return "", fmt.Errorf("internal: no Spark SQL literal for %T", v)
}

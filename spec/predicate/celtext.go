package predicate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CEL prints e back as predicate text, fully parenthesised. Resolved
// predicates are stored and shown in this form.
func (e *Expr) CEL() string {
	var b strings.Builder
	e.printCEL(&b)
	return b.String()
}

var celOps = map[Op]string{OpEq: "==", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpAnd: "&&", OpOr: "||"}

func (e *Expr) printCEL(b *strings.Builder) {
	switch e.Op {
	case OpCol:
		b.WriteString(e.Col.Name)
	case OpLit:
		b.WriteString(celLiteral(e.Val))
	case OpNot:
		b.WriteString("!(")
		e.Args[0].printCEL(b)
		b.WriteString(")")
	case OpAnd, OpOr, OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		b.WriteString("(")
		e.Args[0].printCEL(b)
		b.WriteString(" " + celOps[e.Op] + " ")
		e.Args[1].printCEL(b)
		b.WriteString(")")
	case OpIn:
		b.WriteString("(")
		e.Args[0].printCEL(b)
		b.WriteString(" in [")
		for i, v := range e.Args[1:] {
			if i > 0 {
				b.WriteString(", ")
			}
			v.printCEL(b)
		}
		b.WriteString("])")
	case OpStartsWith, OpEndsWith, OpContains:
		e.Args[0].printCEL(b)
		b.WriteString("." + map[Op]string{OpStartsWith: "startsWith", OpEndsWith: "endsWith", OpContains: "contains"}[e.Op] + "(")
		e.Args[1].printCEL(b)
		b.WriteString(")")
	case OpDateAdd:
		b.WriteString("date_add(")
		e.Args[0].printCEL(b)
		fmt.Fprintf(b, ", %d)", e.N)
	case OpCurrentDate:
		b.WriteString("current_date()")
	case OpCurrentTimestamp:
		b.WriteString("current_timestamp()")
	case OpRand:
		b.WriteString("rand()")
	}
}

func celLiteral(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	case string:
		return strconv.Quote(v)
	case Date:
		return "date('" + v.String() + "')"
	case time.Time:
		return "timestamp('" + v.UTC().Format(time.RFC3339Nano) + "')"
	}
	return fmt.Sprintf("%v", v)
}

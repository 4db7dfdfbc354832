package predicate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// ColumnRef renders a column reference; the runner passes one that
// qualifies columns with a source alias when it pushes the predicate down.
type ColumnRef func(name string) string

// QuotedColumn is the default ColumnRef: the bare, quoted column name.
func QuotedColumn(name string) string { return pq.QuoteIdentifier(name) }

// SQL renders the predicate as a PostgreSQL boolean expression. Per-refresh
// functions must have been resolved (see Resolve); the result never contains
// user text except as quoted literals and quoted identifiers.
func (p *Predicate) SQL(ref ColumnRef) (string, error) {
	if ref == nil {
		ref = QuotedColumn
	}
	r := renderer{ref: ref}
	s := r.expr(p.Root, nil)
	return s, r.err
}

// Complement is the SQL for the rows outside the window. NULL counts as
// outside, so the complement is IS NOT TRUE, never NOT.
func Complement(windowSQL string) string { return "(" + windowSQL + ") IS NOT TRUE" }

type renderer struct {
	ref ColumnRef
	err error
}

// expr renders e; peer is the other operand of a comparison, which decides
// how a literal is typed (a double literal next to a real or double column
// or an int is float8, next to a numeric column it is an exact numeric).
func (r *renderer) expr(e, peer *Expr) string {
	switch e.Op {
	case OpCol:
		return r.ref(e.Col.Name)
	case OpLit:
		return r.literal(e, peer)
	case OpAnd:
		return "(" + r.expr(e.Args[0], nil) + " AND " + r.expr(e.Args[1], nil) + ")"
	case OpOr:
		return "(" + r.expr(e.Args[0], nil) + " OR " + r.expr(e.Args[1], nil) + ")"
	case OpNot:
		// NOT keeps NULL NULL, as CEL's ! keeps an error an error.
		return "(NOT " + r.expr(e.Args[0], nil) + ")"
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		return r.comparison(e)
	case OpIn:
		x := e.Args[0]
		items := make([]string, len(e.Args)-1)
		for i, v := range e.Args[1:] {
			items[i] = r.expr(v, x)
		}
		return "(" + r.operand(x, e.Args[1]) + " IN (" + strings.Join(items, ", ") + "))"
	case OpStartsWith:
		return "starts_with(" + r.expr(e.Args[0], nil) + ", " + r.expr(e.Args[1], nil) + ")"
	case OpEndsWith:
		a, b := r.expr(e.Args[0], nil), r.expr(e.Args[1], nil)
		return "(right(" + a + ", char_length(" + b + ")) = " + b + ")"
	case OpContains:
		return "(strpos(" + r.expr(e.Args[0], nil) + ", " + r.expr(e.Args[1], nil) + ") > 0)"
	case OpDateAdd:
		return fmt.Sprintf("(%s + %d)", r.expr(e.Args[0], nil), e.N)
	case OpRand:
		return "random()"
	case OpCurrentDate, OpCurrentTimestamp:
		r.fail(fmt.Errorf("internal: %s must be resolved before rendering SQL", map[Op]string{OpCurrentDate: "current_date()", OpCurrentTimestamp: "current_timestamp()"}[e.Op]))
		return "NULL"
	}
	r.fail(fmt.Errorf("internal: no SQL for op %d", e.Op))
	return "NULL"
}

func (r *renderer) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

var sqlOps = map[Op]string{OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}

func (r *renderer) comparison(e *Expr) string {
	a, b := e.Args[0], e.Args[1]
	l, rt := r.operand(a, b), r.operand(b, a)
	if a.Kind == KString && e.Op != OpEq && e.Op != OpNe {
		// Byte order, as Go and CEL compare strings.
		l += ` COLLATE "C"`
	}
	return "(" + l + " " + sqlOps[e.Op] + " " + rt + ")"
}

// operand renders one side of a comparison. A timestamp-without-time-zone
// column compared with a timestamptz column is read as UTC, explicitly, so
// the server's TimeZone setting cannot change the window. A numeric column
// compared with an int is read as float8: CEL compares an int with a double
// as doubles, so PostgreSQL must too (exactly, it would tell 2^53+1 from 2^53).
func (r *renderer) operand(e, peer *Expr) string {
	s := r.expr(e, peer)
	if e.Op == OpCol && e.Col.Type.Family == pgtype.Timestamp && peer.Op == OpCol && peer.Col.Type.Family == pgtype.TimestampTZ {
		return "(" + s + " AT TIME ZONE 'UTC')"
	}
	if e.Op == OpCol && e.Col.Type.Family == pgtype.Numeric && peer.Kind == KInt {
		return "(" + s + "::float8)"
	}
	return s
}

func (r *renderer) literal(e, peer *Expr) string {
	peerFamily := pgtype.Other
	if peer != nil && peer.Op == OpCol {
		peerFamily = peer.Col.Type.Family
	}
	switch v := e.Val.(type) {
	case bool:
		if v {
			return "TRUE"
		}
		return "FALSE"
	case int64:
		if peerFamily == pgtype.Float {
			return "float8 '" + strconv.FormatInt(v, 10) + "'"
		}
		if v < 0 {
			return "(" + strconv.FormatInt(v, 10) + ")"
		}
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		// Next to an int, a double is float8 too: PostgreSQL then casts the
		// int to float8, which is how CEL compares an int with a double.
		if peerFamily == pgtype.Float || (peer != nil && peer.Kind == KInt) {
			return "float8 '" + s + "'"
		}
		// An exact numeric: PostgreSQL reads it digit for digit.
		return "(" + s + "::numeric)"
	case string:
		return stringLiteral(v)
	case Date:
		return "DATE '" + v.String() + "'"
	case time.Time:
		if peerFamily == pgtype.Timestamp {
			return "TIMESTAMP '" + v.UTC().Format("2006-01-02 15:04:05.999999") + "'"
		}
		return "TIMESTAMPTZ '" + v.UTC().Format("2006-01-02 15:04:05.999999") + "+00'"
	}
	r.fail(fmt.Errorf("internal: no SQL for literal %T", e.Val))
	return "NULL"
}

// stringLiteral quotes v for SQL the way lib/pq's QuoteLiteral does (E”
// with doubled backslashes when it has one), except that control
// characters are written as escapes: the SQL is shown in terminals, CI
// logs and pull request comments, where a raw ESC, CR or line break from a
// predicate would rewrite what a reviewer sees.
func stringLiteral(v string) string {
	if !strings.ContainsFunc(v, unicode.IsControl) {
		return strings.TrimSpace(pq.QuoteLiteral(v))
	}
	var b strings.Builder
	b.WriteString("E'")
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString("''")
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02X`, r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

package databricks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// pgText is Spark SQL tokens rewritten as PostgreSQL text, with where each
// token of it came from, so that the parser's offsets point into the file.
type pgText struct {
	text  strings.Builder
	from  []int // start of each token in text
	to    []int // its start in the file
	width []int // its length in the file
}

func (p *pgText) emit(t token, s string) {
	if p.text.Len() > 0 {
		p.text.WriteByte(' ')
	}
	p.from = append(p.from, p.text.Len())
	p.to = append(p.to, t.start)
	p.width = append(p.width, t.end-t.start)
	p.text.WriteString(s)
}

// source is the file offset of offset off of the text.
func (p *pgText) source(off int) int {
	k := -1
	for i, f := range p.from {
		if f <= off {
			k = i
		}
	}
	if k < 0 {
		if len(p.to) > 0 {
			return p.to[0]
		}
		return 0
	}
	return p.to[k] + min(off-p.from[k], max(p.width[k]-1, 0))
}

var valueFuncs = map[string]bool{"current_date": true, "current_timestamp": true, "current_time": true, "localtimestamp": true}

var intervalUnit = regexp.MustCompile(`(?i)^(day|days|week|weeks)$`)

// toPG rewrites Spark SQL tokens as PostgreSQL expression text: backquoted
// names double-quoted, strings in PostgreSQL's quoting, current_date()
// without its parentheses (a keyword in PostgreSQL), == as =, a lone ! as
// NOT, INTERVAL 7 DAYS as INTERVAL '7 days'.
func toPG(toks []token) *pgText {
	p := &pgText{}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tQuoted:
			p.emit(t, `"`+strings.ReplaceAll(t.value, `"`, `""`)+`"`)
		case t.kind == tString:
			p.emit(t, pgString(t.value))
		case t.kind == tIdent && valueFuncs[strings.ToLower(t.text)] && i+2 < len(toks) && toks[i+1].text == "(" && toks[i+2].text == ")":
			p.emit(t, t.text)
			i += 2
		case t.kind == tOp && t.text == "==":
			p.emit(t, "=")
		case t.kind == tOp && t.text == "!":
			p.emit(t, "NOT")
		case t.word("interval") && i+2 < len(toks) && toks[i+1].kind == tNumber && intervalUnit.MatchString(toks[i+2].text):
			p.emit(t, "INTERVAL "+pgString(toks[i+1].text+" "+strings.ToLower(toks[i+2].text)))
			i += 2
		default:
			p.emit(t, t.text)
		}
	}
	return p
}

// predicateImport translates one Spark SQL predicate to CEL.
type predicateImport struct {
	pos  func(off int) diag.Pos
	cols map[string]pgtype.Type // the target's columns, when known
	ds   diag.List
	pg   *pgText
}

// celPrec orders CEL's binary operators: || binds loosest.
const (
	precOr = iota + 1
	precAnd
	precRel
	precUnary
	precPrimary
)

// ImportPredicate translates the Spark SQL predicate in toks (tokens of a
// file, positioned by pos) to CEL. cols types literals where a column's type
// is known (a date column compared with '2024-01-01' reads date('…')).
func importPredicate(toks []token, cols map[string]pgtype.Type, pos func(int) diag.Pos) (string, diag.List) {
	if len(toks) == 0 {
		var ds diag.List
		ds.Errorf("RW602", pos(0), "write the condition after REPLACE WHERE, e.g. date >= date_add(current_date(), -7)", "the REPLACE WHERE predicate is empty")
		return "", ds
	}
	for _, t := range toks {
		if t.kind == tBadChar {
			var ds diag.List
			ds.Errorf("RW602", pos(t.start), "close the string or the `name`", "unterminated string or quoted name in the predicate")
			return "", ds
		}
	}
	pi := &predicateImport{pos: pos, cols: cols, pg: toPG(toks)}
	e, se := query.ParseExpr(pi.pg.text.String())
	if se != nil {
		off := toks[0].start
		if se.Offset >= 0 {
			off = pi.pg.source(se.Offset)
		}
		pi.ds.Errorf("RW602", pos(off), "a predicate is one Spark SQL condition over the target's columns, e.g. date >= date_add(current_date(), -7)",
			"cannot read the predicate: %s", se.Message)
		return "", pi.ds
	}
	text, _ := pi.cel(e)
	if pi.ds.HasErrors() {
		return "", pi.ds
	}
	return text, pi.ds
}

func (pi *predicateImport) at(e *query.Expr) diag.Pos {
	if e.Offset < 0 {
		return pi.pos(pi.pg.to[0])
	}
	return pi.pos(pi.pg.source(e.Offset))
}

func (pi *predicateImport) unsupported(e *query.Expr, hint, format string, args ...any) (string, int) {
	if hint == "" {
		hint = "rwc's predicates have comparisons, AND, OR, NOT, BETWEEN, IN, LIKE 'a%', date_add, date_sub, current_date(), current_timestamp() and rand() (docs/databricks.md)"
	}
	pi.ds.Errorf("RW601", pi.at(e), hint, format, args...)
	return "", precPrimary
}

func wrap(s string, prec, need int) string {
	if prec < need {
		return "(" + s + ")"
	}
	return s
}

// cel is e in CEL, with its precedence.
func (pi *predicateImport) cel(e *query.Expr) (string, int) {
	switch e.Kind {
	case query.ExprAnd, query.ExprOr:
		word, prec := "AND", precAnd
		if e.Kind == query.ExprOr {
			word, prec = "OR", precOr
		}
		c, _ := fromSpark(infix, word)
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			s, p := pi.cel(a)
			parts[i] = wrap(s, p, prec+b2i(i > 0))
		}
		return strings.Join(parts, " "+c.cel+" "), prec
	case query.ExprNot:
		c, _ := fromSpark(prefix, "NOT")
		s, p := pi.cel(e.Args[0])
		return c.cel + wrap(s, p, precPrimary), precUnary
	case query.ExprOp:
		return pi.op(e)
	case query.ExprBetween:
		x := pi.operand(e.Args[0], nil)
		lo, hi := pi.operand(e.Args[1], e.Args[0]), pi.operand(e.Args[2], e.Args[0])
		if e.Not {
			return fmt.Sprintf("%s < %s || %s > %s", x, lo, x, hi), precOr
		}
		return fmt.Sprintf("%s >= %s && %s <= %s", x, lo, x, hi), precAnd
	case query.ExprIn:
		x := pi.operand(e.Args[0], nil)
		items := make([]string, len(e.Args)-1)
		for i, a := range e.Args[1:] {
			if a.Kind != query.ExprConst && a.Kind != query.ExprCast {
				return pi.unsupported(a, "list only literal values: region IN ('emea', 'asia')", "an IN list item must be a literal value in a window predicate")
			}
			items[i] = pi.operand(a, e.Args[0])
		}
		word := "IN"
		if e.Not {
			word = "NOT IN"
		}
		c, _ := fromSpark(inList, word)
		s := x + " " + c.cel + " [" + strings.Join(items, ", ") + "]"
		if c.negate {
			not, _ := sparkOf(predicate.OpNot)
			return not.cel + "(" + s + ")", precUnary
		}
		return s, precRel
	case query.ExprColumn, query.ExprConst, query.ExprCall, query.ExprCast, query.ExprValueFunc:
		return pi.operand(e, nil), precPrimary
	case query.ExprNullTest:
		return pi.unsupported(e, "a row whose column is NULL is in no window (a comparison with NULL is not TRUE); drop the test only if that is what you meant",
			"IS [NOT] NULL has no equivalent in rwc's predicates")
	case query.ExprOther:
		if e.Name == "LIKE" && len(e.Args) == 2 {
			return pi.like(e)
		}
		return pi.unsupported(e, "", "%s has no equivalent in rwc's predicates", e.Name)
	}
	return pi.unsupported(e, "", "this construct has no equivalent in rwc's predicates")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// op is a comparison, or date arithmetic.
func (pi *predicateImport) op(e *query.Expr) (string, int) {
	if len(e.Args) == 2 && (e.Name == "+" || e.Name == "-") {
		return pi.dateArith(e), precPrimary
	}
	if len(e.Args) == 1 && e.Name == "-" && e.Args[0].Kind == query.ExprConst {
		return pi.operand(e, nil), precPrimary
	}
	c, ok := fromSpark(infix, e.Name)
	if !ok || len(e.Args) != 2 || c.form != infix || c.op == predicate.OpAnd || c.op == predicate.OpOr {
		return pi.unsupported(e, "", "operator %s has no equivalent in rwc's predicates", e.Name)
	}
	for _, a := range e.Args {
		if loose(a) {
			// PostgreSQL's parser, which read it, binds IN, BETWEEN and LIKE
			// tighter than a comparison; Spark looser: b1 < b2 IN (FALSE) is
			// b1 < (b2 IN (FALSE)) here and (b1 < b2) IN (FALSE) on
			// Databricks. Which was meant cannot be told, so neither is
			// imported.
			return pi.unsupported(a, "write it as Databricks reads it, the comparison in parentheses: (b1 < b2) IN (FALSE)",
				"a comparison of an IN, BETWEEN or LIKE is read otherwise by Spark SQL (which binds the comparison first) than by PostgreSQL")
		}
	}
	l := pi.operand(e.Args[0], e.Args[1])
	r := pi.operand(e.Args[1], e.Args[0])
	return l + " " + c.cel + " " + r, precRel
}

// loose reports whether e is an IN, BETWEEN or LIKE, which Spark SQL binds
// looser than a comparison and PostgreSQL tighter.
func loose(e *query.Expr) bool {
	switch e.Kind {
	case query.ExprIn, query.ExprBetween:
		return true
	case query.ExprOther:
		return e.Name == "LIKE" || e.Name == "ILIKE" || e.Name == "SIMILAR TO"
	}
	return false
}

// dateArith reads d + n, d - n and d ± INTERVAL 'n days' as date_add.
func (pi *predicateImport) dateArith(e *query.Expr) string {
	n, ok := dayCount(e.Args[1])
	if !ok {
		s, _ := pi.unsupported(e, "CEL adds days to a date: date_add(d, n), n an integer literal", "arithmetic other than date ± days has no equivalent in rwc's predicates")
		return s
	}
	if e.Name == "-" {
		n = -n
	}
	return fmt.Sprintf("date_add(%s, %d)", pi.operand(e.Args[0], nil), n)
}

var intervalDays = regexp.MustCompile(`(?i)^\s*(\d+)\s*(day|days|week|weeks)\s*$`)

func dayCount(e *query.Expr) (int64, bool) {
	if n, ok := intConst(e); ok {
		return n, true
	}
	if e.Kind == query.ExprCast && e.Name == "interval" {
		if s, ok := e.Args[0].Value.(string); ok && e.Args[0].Kind == query.ExprConst {
			if m := intervalDays.FindStringSubmatch(s); m != nil {
				n, err := strconv.ParseInt(m[1], 10, 64)
				if strings.HasPrefix(strings.ToLower(m[2]), "week") {
					n *= 7
				}
				return n, err == nil
			}
		}
	}
	return 0, false
}

func intConst(e *query.Expr) (int64, bool) {
	switch {
	case e.Kind == query.ExprConst:
		n, ok := e.Value.(int64)
		return n, ok
	case e.Kind == query.ExprOp && e.Name == "-" && len(e.Args) == 1:
		n, ok := intConst(e.Args[0])
		return -n, ok
	}
	return 0, false
}

// operand is a value in CEL. peer, when set, is what it is compared with:
// a string literal compared with a date or timestamp column is typed.
func (pi *predicateImport) operand(e, peer *query.Expr) string {
	switch e.Kind {
	case query.ExprColumn:
		return pi.column(e)
	case query.ExprConst:
		return pi.literal(e, peer)
	case query.ExprOp:
		if len(e.Args) == 1 && e.Name == "-" && e.Args[0].Kind == query.ExprConst {
			if n, ok := intConst(e); ok {
				return strconv.FormatInt(n, 10)
			}
			if s, ok := e.Args[0].Value.(string); ok && e.Args[0].Name == "numeric" {
				return "-" + celDouble(s)
			}
		}
		if s, p := pi.op(e); s != "" {
			return wrap(s, p, precPrimary)
		}
		return ""
	case query.ExprCall:
		return pi.call(e)
	case query.ExprValueFunc:
		switch e.Name {
		case "current_date", "current_timestamp":
			return e.Name + "()"
		}
		s, _ := pi.unsupported(e, "use current_date() or current_timestamp()", "%s has no equivalent in rwc's predicates", strings.ToUpper(e.Name))
		return s
	case query.ExprCast:
		return pi.cast(e)
	}
	s, p := pi.cel(e)
	return wrap(s, p, precPrimary)
}

var celIdent = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

var celReserved = map[string]bool{"in": true, "as": true, "break": true, "const": true, "continue": true, "else": true, "for": true,
	"function": true, "if": true, "import": true, "let": true, "loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true, "true": true, "false": true, "null": true}

func (pi *predicateImport) column(e *query.Expr) string {
	if len(e.Qualifier) > 0 {
		pi.ds.Warnf("RW603", pi.at(e), "write the bare column name: the predicate is over the target table's columns",
			"the qualifier %s. is dropped: a REPLACE WHERE predicate names the target's columns", strings.Join(e.Qualifier, "."))
	}
	if !celIdent.MatchString(e.Name) || celReserved[e.Name] {
		s, _ := pi.unsupported(e, "rename the column to letters, digits and _ (CEL names variables that way)",
			"column %q cannot be named in a CEL predicate", e.Name)
		return s
	}
	return e.Name
}

func (pi *predicateImport) family(peer *query.Expr) pgtype.Family {
	for peer != nil {
		switch {
		case peer.Kind == query.ExprColumn:
			if t, ok := pi.cols[peer.Name]; ok {
				return t.Family
			}
			return pgtype.Other
		case peer.Kind == query.ExprCall && len(peer.Args) > 0 && (peer.Name == "date_add" || peer.Name == "date_sub"):
			return pgtype.Date
		case peer.Kind == query.ExprOp && len(peer.Args) == 2:
			peer = peer.Args[0]
		default:
			return pgtype.Other
		}
	}
	return pgtype.Other
}

func (pi *predicateImport) literal(e, peer *query.Expr) string {
	switch v := e.Value.(type) {
	case nil:
		s, _ := pi.unsupported(e, "a comparison with NULL is never TRUE: no row would be in the window", "NULL has no equivalent in rwc's predicates")
		return s
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case string:
		if e.Name == "numeric" {
			// -9223372036854775808 is an integer PostgreSQL's lexer reads
			// as a numeric (its digits overflow before the sign applies).
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return strconv.FormatInt(n, 10)
			}
			return celDouble(v)
		}
		switch pi.family(peer) {
		case pgtype.Date:
			return pi.dateLit(e, v)
		case pgtype.Timestamp, pgtype.TimestampTZ:
			return pi.timestampLit(e, v)
		}
		return strconv.Quote(v)
	}
	s, _ := pi.unsupported(e, "", "this literal has no equivalent in rwc's predicates")
	return s
}

func celDouble(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	return s
}

func (pi *predicateImport) dateLit(e *query.Expr, s string) string {
	if _, err := predicate.ParseDate(strings.TrimSpace(s)); err != nil {
		p, _ := pi.unsupported(e, "write the date as 'YYYY-MM-DD'", "%q is not a date", s)
		return p
	}
	return "date('" + strings.TrimSpace(s) + "')"
}

var sparkTimestamp = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?))?\s*(Z|[+-]\d{2}:\d{2}|UTC)?$`)

// timestampLit is a Spark timestamp string as CEL's timestamp('RFC 3339').
// A string without a zone is read in UTC (docs/databricks.md: the session
// time zone is assumed to be UTC).
func (pi *predicateImport) timestampLit(e *query.Expr, s string) string {
	m := sparkTimestamp.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		p, _ := pi.unsupported(e, "write the timestamp as 'YYYY-MM-DD HH:MM:SS', optionally with Z or an offset", "%q is not a timestamp rwc reads", s)
		return p
	}
	clock := m[2]
	switch len(clock) {
	case 0:
		clock = "00:00:00"
	case 5:
		clock += ":00"
	}
	zone := m[3]
	if zone == "" || zone == "UTC" {
		zone = "Z"
	}
	return "timestamp('" + m[1] + "T" + clock + zone + "')"
}

func (pi *predicateImport) cast(e *query.Expr) string {
	arg := e.Args[0]
	s, isString := arg.Value.(string)
	if arg.Kind != query.ExprConst || !isString || arg.Name == "numeric" {
		p, _ := pi.unsupported(e, "rwc's predicates have no casts; compare the column with a literal: date >= DATE'2024-01-01'", "a cast of an expression has no equivalent in rwc's predicates")
		return p
	}
	switch e.Name {
	case "date":
		return pi.dateLit(e, s)
	case "timestamp", "timestamptz":
		return pi.timestampLit(e, s)
	case "text", "varchar", "string":
		return strconv.Quote(s)
	}
	p, _ := pi.unsupported(e, "write DATE'YYYY-MM-DD' or TIMESTAMP'YYYY-MM-DD HH:MM:SS'", "a %s literal has no equivalent in rwc's predicates", strings.ToUpper(e.Name))
	return p
}

// call is a function call, looked up in the construct table; date(),
// to_date() and timestamp() of a string literal are typed literals.
func (pi *predicateImport) call(e *query.Expr) string {
	switch e.Name {
	case "date", "to_date", "timestamp", "to_timestamp":
		if len(e.Args) == 1 && e.Args[0].Kind == query.ExprConst {
			if s, ok := e.Args[0].Value.(string); ok {
				if strings.Contains(e.Name, "date") {
					return pi.dateLit(e, s)
				}
				return pi.timestampLit(e, s)
			}
		}
	}
	c, ok := fromSpark(call, e.Name)
	if !ok || len(e.Qualifier) > 0 {
		s, _ := pi.unsupported(e, "", "function %s() has no equivalent in rwc's predicates", e.Name)
		return s
	}
	switch c.form {
	case niladic:
		if len(e.Args) > 0 {
			s, _ := pi.unsupported(e, "call "+c.spark+"() without arguments", "%s() with arguments has no equivalent in rwc's predicates", e.Name)
			return s
		}
		return c.cel + "()"
	case method:
		if len(e.Args) != 2 {
			s, _ := pi.unsupported(e, "", "%s() takes two arguments", e.Name)
			return s
		}
		return pi.operand(e.Args[0], nil) + "." + c.cel + "(" + pi.operand(e.Args[1], nil) + ")"
	}
	// date_add, date_sub: a date and a literal day count.
	if len(e.Args) != 2 {
		s, _ := pi.unsupported(e, "", "%s() takes a date and a number of days", e.Name)
		return s
	}
	n, ok := intConst(e.Args[1])
	if !ok {
		s, _ := pi.unsupported(e.Args[1], "write the number of days as an integer literal: date_add(current_date(), -7)", "the day count of %s() must be an integer literal in a window predicate", e.Name)
		return s
	}
	return fmt.Sprintf("%s(%s, %d)", c.cel, pi.operand(e.Args[0], nil), n)
}

// like reads LIKE 'a%', '%a' and '%a%' as startsWith, endsWith, contains.
func (pi *predicateImport) like(e *query.Expr) (string, int) {
	pat, ok := e.Args[1].Value.(string)
	if !ok || e.Args[1].Kind != query.ExprConst {
		return pi.unsupported(e, "", "LIKE with a pattern that is not a literal has no equivalent in rwc's predicates")
	}
	core := strings.TrimSuffix(strings.TrimPrefix(pat, "%"), "%")
	pre, suf := strings.HasPrefix(pat, "%"), strings.HasSuffix(pat, "%") && len(pat) > 1
	if core == "" || strings.ContainsAny(core, "%_\\") {
		return pi.unsupported(e, "rwc reads LIKE 'a%', '%a' and '%a%' (startsWith, endsWith, contains)", "LIKE %s has no equivalent in rwc's predicates", sparkString(pat))
	}
	x := pi.operand(e.Args[0], nil)
	var s string
	switch {
	case pre && suf:
		s = x + ".contains(" + strconv.Quote(core) + ")"
	case pre:
		s = x + ".endsWith(" + strconv.Quote(core) + ")"
	case suf:
		s = x + ".startsWith(" + strconv.Quote(core) + ")"
	case e.Not:
		return x + " != " + strconv.Quote(core), precRel
	default:
		return x + " == " + strconv.Quote(core), precRel
	}
	if e.Not {
		return "!" + s, precUnary
	}
	return s, precPrimary
}

// ImportPredicate translates a Spark SQL predicate over cols to CEL; the
// diagnostics are positioned in the text (file "predicate").
func ImportPredicate(spark string, cols []predicate.Column) (string, diag.List) {
	types := map[string]pgtype.Type{}
	for _, c := range cols {
		types[c.Name] = c.Type
	}
	l := newLines(spark)
	return importPredicate(lex(spark), types, func(off int) diag.Pos {
		line, col := l.at(off)
		return diag.Pos{File: "predicate", Line: line, Column: col}
	})
}

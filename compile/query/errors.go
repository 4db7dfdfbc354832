package query

import (
	"errors"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
)

// Reason tells the caller which diagnostic a SyntaxError stands for.
type Reason int

const (
	// ReasonSyntax: PostgreSQL's parser rejected the text.
	ReasonSyntax Reason = iota
	// ReasonEmpty: no statement at all (empty, or only comments).
	ReasonEmpty
	// ReasonMultipleStatements: more than one statement; Offset is the start
	// of the second one.
	ReasonMultipleStatements
	// ReasonNotSelect: a single statement that is not a plain SELECT
	// (INSERT, SELECT INTO, a data-modifying CTE, EXPLAIN, …).
	ReasonNotSelect
	// ReasonTooLong: the query is past MaxQueryBytes and was not parsed.
	ReasonTooLong
)

// MaxQueryBytes is the longest query rwc parses. A real source query is a
// few kilobytes; PostgreSQL's parser needs about 400 bytes of memory per
// byte of a long OR chain, so a spec directory of such queries would take
// gigabytes to lint.
const MaxQueryBytes = 256 << 10

// SyntaxError is why a query cannot be analysed. Statements that parse but
// are not a single SELECT are reported through the same type (with a Reason)
// rather than as a flag on Analysis: a source query must be one SELECT, and
// the caller turns all of these into one error diagnostic at Offset.
type SyntaxError struct {
	Offset  int // byte offset into the query; -1 if unknown
	Message string
	Hint    string
	Reason  Reason
}

func (e *SyntaxError) Error() string { return e.Message }

// groupByAllHint is for users coming from engines (Databricks, DuckDB,
// Snowflake) where GROUP BY ALL groups by every non-aggregate column.
const groupByAllHint = "PostgreSQL has no GROUP BY ALL; list the grouping columns: GROUP BY a, b"

// parseError turns pg_query's error into a SyntaxError with a byte offset.
func parseError(sql string, err error) *SyntaxError {
	se := &SyntaxError{Offset: -1, Message: err.Error(), Reason: ReasonSyntax}
	var pe *parser.Error
	switch {
	case !errors.As(err, &pe):
		// Not PostgreSQL's verdict but decoding the tree failed, in
		// practice because it nests deeper than protobuf allows.
		se.Message = "cannot analyse the query: " + se.Message
		se.Hint = "the query is nested too deeply; simplify it"
		return se
	case pe.Cursorpos > 0:
		se.Offset = cursorToOffset(sql, pe.Cursorpos)
	}
	// In PostgreSQL `GROUP BY ALL a, b` is valid (ALL is a noise word), so
	// the hint is only for a parse that failed right after ALL, where the
	// grouping list should have started; an error elsewhere is another
	// problem.
	if at, next := groupByAll(sql); at >= 0 && (se.Offset < 0 || se.Offset == next || (next == len(sql) && se.Offset >= at)) {
		se.Offset = at
		se.Message = "GROUP BY ALL is not supported by PostgreSQL (" + se.Message + ")"
		se.Hint = groupByAllHint
	}
	return se
}

// cursorToOffset converts PostgreSQL's error cursor (1-based, in characters)
// to a byte offset. PostgreSQL counts characters with pg_mbstrlen_with_len,
// which steps by the length the UTF-8 lead byte announces, even in invalid
// UTF-8; mirroring it keeps the offset exact for any input.
func cursorToOffset(sql string, cursor int) int {
	i := 0
	for n := 1; n < cursor && i < len(sql); n++ {
		i += utf8LeadLen(sql[i])
	}
	if i > len(sql) {
		i = len(sql)
	}
	return i
}

// utf8LeadLen is PostgreSQL's pg_utf_mblen.
func utf8LeadLen(b byte) int {
	switch {
	case b&0x80 == 0:
		return 1
	case b&0xe0 == 0xc0:
		return 2
	case b&0xf0 == 0xe0:
		return 3
	case b&0xf8 == 0xf0:
		return 4
	}
	return 1
}

var groupByAllRE = regexp.MustCompile(`(?is)\bgroup\s+by\s+(all)\b`)

// groupByAll returns the byte offsets of ALL in the first `GROUP BY ALL`
// and of the token after it (len(sql) if none), or -1. It uses PostgreSQL's
// scanner so that words inside comments and string literals do not count;
// if the text does not even scan, it falls back to a regular expression.
func groupByAll(sql string) (at, next int) {
	res, err := pg.Scan(sql)
	if err != nil {
		m := groupByAllRE.FindStringSubmatchIndex(sql)
		if m == nil {
			return -1, -1
		}
		next = m[3]
		for next < len(sql) && strings.ContainsRune(" \t\r\n\f", rune(sql[next])) {
			next++
		}
		return m[2], next
	}
	var toks []*pg.ScanToken
	for _, t := range res.GetTokens() {
		if t.GetToken() != pg.Token_SQL_COMMENT && t.GetToken() != pg.Token_C_COMMENT {
			toks = append(toks, t)
		}
	}
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].GetToken() == pg.Token_GROUP_P && toks[i+1].GetToken() == pg.Token_BY && toks[i+2].GetToken() == pg.Token_ALL {
			next = len(sql)
			if i+3 < len(toks) {
				next = int(toks[i+3].GetStart())
			}
			return int(toks[i+2].GetStart()), next
		}
	}
	return -1, -1
}

// nulHint is for a query holding a NUL, which YAML writes as an escape in
// a double-quoted scalar; PostgreSQL cannot take one in query text.
const nulHint = `remove the \0 (or \x00, \u0000) escape; PostgreSQL query text cannot hold a NUL`

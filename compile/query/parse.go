package query

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// analyzer holds the parse tree and everything derived from it. Levels and
// traces are built lazily by Lineage, under mu, so an Analysis can be shared.
type analyzer struct {
	mu     sync.Mutex
	sql    string
	top    *pg.SelectStmt
	tables []TableRef // every RangeVar that is not a CTE reference

	ctes   map[*pg.CommonTableExpr]*cteDef
	envOf  map[*pg.SelectStmt]*cteEnv
	levels map[*pg.SelectStmt]*scope
	traces map[traceKey]*trace
	// tablesOf memoises fromTables; an entry is nil while being computed.
	tablesOf map[*pg.SelectStmt][]TableRef

	notSelect *SyntaxError
	cteOffset int
}

// Analyze parses a source query with PostgreSQL's parser and reports what
// rwc needs from it. The query must be exactly one SELECT (possibly with
// WITH, set operations or VALUES); anything else is a *SyntaxError with a
// Reason saying what it is.
func Analyze(sql string) (*Analysis, *SyntaxError) {
	if len(sql) > MaxQueryBytes {
		return nil, &SyntaxError{Offset: 0, Message: fmt.Sprintf("the query is %d KiB long, past the %d KiB rwc parses", len(sql)>>10, MaxQueryBytes>>10),
			Hint: "a source query is a few kilobytes: move long value lists into a table and join it", Reason: ReasonTooLong}
	}
	// The parser takes a C string: a NUL would silently cut the query short
	// and rwc would analyse something else than what it runs.
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return nil, &SyntaxError{Offset: i, Message: "query contains a NUL byte", Hint: nulHint, Reason: ReasonSyntax}
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return nil, parseError(sql, err)
	}
	stmts := tree.GetStmts()
	switch {
	case len(stmts) == 0:
		return nil, &SyntaxError{Offset: -1, Message: "query is empty", Hint: "write one SELECT statement", Reason: ReasonEmpty}
	case len(stmts) > 1:
		return nil, &SyntaxError{
			Offset:  statementStart(sql, int(stmts[1].GetStmtLocation())),
			Message: "query has more than one statement; a source query is a single SELECT",
			Hint:    "remove the extra statements (and the ';' between them)",
			Reason:  ReasonMultipleStatements,
		}
	}
	fingerprint, err := fingerprintOf(sql)
	if err != nil {
		return nil, &SyntaxError{Offset: -1, Message: err.Error(), Reason: ReasonSyntax}
	}
	raw := stmts[0]
	top := raw.GetStmt().GetSelectStmt()
	if top == nil {
		return nil, &SyntaxError{
			Offset:  statementStart(sql, int(raw.GetStmtLocation())),
			Message: "query is " + statementKind(raw.GetStmt()) + "; a source query must be a SELECT",
			Reason:  ReasonNotSelect,
		}
	}
	a := &analyzer{
		sql:    sql,
		top:    top,
		ctes:   map[*pg.CommonTableExpr]*cteDef{},
		envOf:  map[*pg.SelectStmt]*cteEnv{},
		levels: map[*pg.SelectStmt]*scope{},
		traces: map[traceKey]*trace{},

		tablesOf: map[*pg.SelectStmt][]TableRef{},
	}
	a.collect(top.ProtoReflect(), nil)
	if a.notSelect != nil {
		return nil, a.notSelect
	}
	res := &Analysis{
		Fingerprint: fingerprint,
		Tables:      distinctTables(a.tables),
		References:  byOffset(a.tables),
		SetOp:       isSetOp(top),
		Calls:       calls(top),
		Locks:       locks(sql, top),
		Params:      params(top),
		Body:        body(sql, raw),
		q:           a,
	}
	for _, t := range targets(leftmost(top)) {
		if t.star {
			if res.Star == nil {
				res.Star = &StarRef{Offset: t.offset, Qualifier: t.qual}
			}
			continue
		}
		res.Columns = append(res.Columns, OutputColumn{
			Name: t.name, Offset: t.offset, Kind: exprKind(t.val), Named: t.named, Aliased: t.aliased,
		})
	}
	a.mu.Lock()
	for _, s := range arms(top) {
		if a.scope(s).aggregated() {
			res.Aggregates = true
		}
	}
	a.mu.Unlock()
	return res, nil
}

// body is the text of the statement raw, whose length PostgreSQL leaves
// zero when it runs to the end.
func body(sql string, raw *pg.RawStmt) string {
	start, n := int(raw.GetStmtLocation()), int(raw.GetStmtLen())
	if start < 0 || start > len(sql) || n <= 0 || start+n > len(sql) {
		n = len(sql) - max(start, 0)
	}
	return strings.TrimSpace(sql[max(start, 0) : max(start, 0)+n])
}

// statementStart skips the whitespace and comments PostgreSQL includes at
// the start of a statement's location, so the offset points at its first
// word.
func statementStart(sql string, loc int) int {
	if loc < 0 || loc > len(sql) {
		return -1
	}
	res, err := pg.Scan(sql[loc:])
	if err != nil {
		return loc
	}
	for _, t := range res.GetTokens() {
		if t.GetToken() != pg.Token_SQL_COMMENT && t.GetToken() != pg.Token_C_COMMENT {
			return loc + int(t.GetStart())
		}
	}
	return loc
}

// statementKind names a statement for a message: "an INSERT statement".
func statementKind(n *pg.Node) string {
	switch n.GetNode().(type) {
	case *pg.Node_InsertStmt:
		return "an INSERT statement"
	case *pg.Node_UpdateStmt:
		return "an UPDATE statement"
	case *pg.Node_DeleteStmt:
		return "a DELETE statement"
	case *pg.Node_MergeStmt:
		return "a MERGE statement"
	case *pg.Node_ExplainStmt:
		return "an EXPLAIN statement"
	case *pg.Node_CreateTableAsStmt:
		return "a CREATE TABLE AS statement"
	case *pg.Node_CreateStmt:
		return "a CREATE TABLE statement"
	case *pg.Node_VariableSetStmt:
		return "a SET statement"
	}
	// Otherwise the node's message name: TruncateStmt → "a TRUNCATE statement".
	name := ""
	n.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.Message() != nil {
			name = string(fd.Message().Name())
		}
		return false
	})
	name = strings.TrimSuffix(name, "Stmt")
	if name == "" {
		return "not a statement rwc knows"
	}
	var words []string
	start := 0
	for i := 1; i <= len(name); i++ {
		if i == len(name) || (name[i] >= 'A' && name[i] <= 'Z') {
			words = append(words, strings.ToUpper(name[start:i]))
			start = i
		}
	}
	return "a " + strings.Join(words, " ") + " statement"
}

// Warm pays the parser's one-time start-up (the C library's, and the
// protobuf types' of its parse tree: about 5 ms), so that a caller can
// have it done beside other work before the first query it analyses.
func Warm() { _, _ = Analyze("SELECT 1") }

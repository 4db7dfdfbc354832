package query

import (
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Call is one function call written in the query, where it is written.
// Names are as PostgreSQL resolves identifiers: unquoted ones folded to
// lower case, quoted ones exact. Schema is "" when not qualified.
type Call struct {
	Schema, Name string
	// Args is the number of arguments written; with the name it narrows
	// the overloads a catalog lookup has to consider.
	Args   int
	Offset int // byte offset of the function's name (its schema when qualified)
}

// Lock is a locking clause (FOR UPDATE, FOR SHARE, …) anywhere in the query.
type Lock struct {
	Clause string // "FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"
	Offset int    // byte offset of its FOR; -1 when the text could not be matched to the tree
}

// calls lists every function call in the tree, in text order.
func calls(top *pg.SelectStmt) []Call {
	var out []Call
	walk(top.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		if fc, ok := m.Interface().(*pg.FuncCall); ok {
			names, good := stringList(fc.GetFuncname())
			if good && len(names) > 0 {
				c := Call{Name: names[len(names)-1], Args: len(fc.GetArgs()), Offset: int(fc.GetLocation())}
				if len(names) > 1 {
					c.Schema = names[len(names)-2]
				}
				out = append(out, c)
			}
		}
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// params lists where the query refers to a parameter ($1).
func params(top *pg.SelectStmt) []int {
	var out []int
	walk(top.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok {
			out = append(out, int(p.GetLocation()))
		}
		return true
	})
	sort.Ints(out)
	return out
}

// locks finds the query's locking clauses. The parse tree has them
// (SelectStmt.lockingClause, at every level) but not where they are
// written, so their positions come from PostgreSQL's scanner: each FOR
// followed by a lock strength that is not an argument of SUBSTRING or
// OVERLAY, the only other places that grammar lets FOR stand before such
// a word (`substring(s FOR share)`, share being a column). When the two
// counts disagree the clauses are still reported, without a position.
func locks(sql string, top *pg.SelectStmt) []Lock {
	var inTree []Lock
	walk(top.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		if lc, ok := m.Interface().(*pg.LockingClause); ok {
			inTree = append(inTree, Lock{Clause: strengthClause(lc.GetStrength()), Offset: -1})
		}
		return true
	})
	if len(inTree) == 0 {
		return nil
	}
	written := writtenLocks(sql)
	if len(written) != len(inTree) {
		return inTree
	}
	return written
}

func strengthClause(s pg.LockClauseStrength) string {
	switch s {
	case pg.LockClauseStrength_LCS_FORKEYSHARE:
		return "FOR KEY SHARE"
	case pg.LockClauseStrength_LCS_FORSHARE:
		return "FOR SHARE"
	case pg.LockClauseStrength_LCS_FORNOKEYUPDATE:
		return "FOR NO KEY UPDATE"
	}
	return "FOR UPDATE"
}

// writtenLocks scans the text for locking clauses (see locks).
func writtenLocks(sql string) []Lock {
	res, err := pg.Scan(sql)
	if err != nil {
		return nil
	}
	var toks []*pg.ScanToken
	for _, t := range res.GetTokens() {
		if t.GetToken() != pg.Token_SQL_COMMENT && t.GetToken() != pg.Token_C_COMMENT {
			toks = append(toks, t)
		}
	}
	var out []Lock
	// parens records, per open parenthesis, whether it opens the argument
	// list of SUBSTRING or OVERLAY.
	var parens []bool
	for i, t := range toks {
		switch t.GetToken() {
		case pg.Token_ASCII_40:
			special := i > 0 && (toks[i-1].GetToken() == pg.Token_SUBSTRING || toks[i-1].GetToken() == pg.Token_OVERLAY)
			parens = append(parens, special)
		case pg.Token_ASCII_41:
			if len(parens) > 0 {
				parens = parens[:len(parens)-1]
			}
		case pg.Token_FOR:
			if len(parens) > 0 && parens[len(parens)-1] {
				continue
			}
			if clause := strengthAt(toks[i+1:]); clause != "" {
				out = append(out, Lock{Clause: clause, Offset: int(t.GetStart())})
			}
		}
	}
	return out
}

// strengthAt names the lock strength the tokens start with, or "".
func strengthAt(toks []*pg.ScanToken) string {
	tok := func(i int) pg.Token {
		if i < len(toks) {
			return toks[i].GetToken()
		}
		return pg.Token_NUL
	}
	switch {
	case tok(0) == pg.Token_UPDATE:
		return "FOR UPDATE"
	case tok(0) == pg.Token_SHARE:
		return "FOR SHARE"
	case tok(0) == pg.Token_NO && tok(1) == pg.Token_KEY && tok(2) == pg.Token_UPDATE:
		return "FOR NO KEY UPDATE"
	case tok(0) == pg.Token_KEY && tok(1) == pg.Token_SHARE:
		return "FOR KEY SHARE"
	}
	return ""
}

package query

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Fingerprint identifies a query's meaning as written, ignoring whitespace,
// comments, keyword case, the case of unquoted names and a trailing
// semicolon: two texts with the same fingerprint parse to the same tree.
//
// It is deliberately not pg_query's own fingerprint, which is built to group
// queries by shape: it ignores constants (`date > '2024-01-01'` and
// `date > '2025-01-01'` match), aliases (`AS day` and `AS d` match) and the
// order of target lists — all changes rwc must see. Here PostgreSQL's own
// scanner splits the text into tokens, and the tokens are hashed: keywords
// and unquoted names lowercased (PostgreSQL folds them), constants and
// quoted names as written. Texts that differ only in optional syntax
// (`INNER JOIN` for `JOIN`, extra parentheses) fingerprint differently,
// which costs one needless recompute, never a missed change. Scanning is
// about ten times cheaper than hashing the parse tree, which planning 500
// flows felt.
func Fingerprint(sql string) (string, error) {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return "", &SyntaxError{Offset: i, Message: "query contains a NUL byte", Hint: nulHint, Reason: ReasonSyntax}
	}
	if _, err := pg.Parse(sql); err != nil {
		return "", parseError(sql, err)
	}
	return fingerprintOf(sql)
}

// fingerprintOf hashes the tokens of a query that parsed.
func fingerprintOf(sql string) (string, error) {
	scan, err := pg.Scan(sql)
	if err != nil {
		return "", err
	}
	toks := scan.GetTokens()
	// Comments are tokens too; a trailing ';' ends the statement and adds
	// nothing.
	kept := toks[:0:0]
	for _, t := range toks {
		if t.Token != pg.Token_SQL_COMMENT && t.Token != pg.Token_C_COMMENT {
			kept = append(kept, t)
		}
	}
	for len(kept) > 0 && sql[kept[len(kept)-1].Start:kept[len(kept)-1].End] == ";" {
		kept = kept[:len(kept)-1]
	}
	h := sha256.New()
	var n [8]byte
	for _, t := range kept {
		text := sql[t.Start:t.End]
		if t.KeywordKind != pg.KeywordKind_NO_KEYWORD || t.Token == pg.Token_IDENT && !strings.HasPrefix(text, `"`) && !strings.HasPrefix(strings.ToUpper(text), `U&"`) {
			text = asciiLower(text)
		}
		binary.BigEndian.PutUint32(n[:4], uint32(t.Token))
		binary.BigEndian.PutUint32(n[4:], uint32(len(text)))
		h.Write(n[:])
		h.Write([]byte(text))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// asciiLower folds A-Z only, as PostgreSQL folds unquoted names.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

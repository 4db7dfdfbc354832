package query

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"google.golang.org/protobuf/proto"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Fingerprint identifies a query's meaning as written, ignoring whitespace,
// comments, keyword case and the case of unquoted names: two texts with the
// same fingerprint parse to the same tree.
//
// It is deliberately not pg_query's own fingerprint, which is built to group
// queries by shape: it ignores constants (`date > '2024-01-01'` and
// `date > '2025-01-01'` match), aliases (`AS day` and `AS d` match) and the
// order of target lists — all changes rwc must see. Here the parse tree is
// hashed whole, token locations removed. The tree's layout belongs to the
// PostgreSQL version pg_query embeds, so a library upgrade may change
// fingerprints (rwc then sees "query changed" once).
func Fingerprint(sql string) (string, error) {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return "", &SyntaxError{Offset: i, Message: "query contains a NUL byte", Reason: ReasonSyntax}
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return "", parseError(sql, err)
	}
	return fingerprintOf(tree)
}

// fingerprintOf hashes a parsed tree; Analyze calls it on the tree it
// already has, so a query is parsed once.
func fingerprintOf(tree *pg.ParseResult) (string, error) {
	h := sha256.New()
	for _, s := range tree.GetStmts() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(withoutLocations(s.GetStmt()))
		if err != nil {
			return "", err
		}
		// Length-prefix each statement so boundaries are part of the hash.
		h.Write([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

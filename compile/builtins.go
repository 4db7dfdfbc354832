package compile

import (
	_ "embed"
	"strings"
)

// volatileBuiltinsText is generated from PostgreSQL 15's pg_proc by
// `go test ./run -run TestVolatileBuiltins -update`; the same test fails
// when the list and the server's catalog differ.
//
//go:embed volatile_builtins.txt
var volatileBuiltinsText string

// volatileBuiltins is the set of pg_catalog function names lint warns on.
var volatileBuiltins = parseNameList(volatileBuiltinsText)

// VolatileBuiltinsText is the embedded list as it is stored, for the test
// that compares it with a live server's catalog.
func VolatileBuiltinsText() string { return volatileBuiltinsText }

// parseNameList reads one name a line; # starts a comment line.
func parseNameList(text string) map[string]bool {
	names := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			names[l] = true
		}
	}
	return names
}

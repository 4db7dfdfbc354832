package diag

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// Text output shows no control character of a spec's: a file name or a
// source line holding a line break, an ESC or a CR cannot start a line of
// its own (a GitHub workflow command) or rewrite the terminal.
func TestWriteTextShowsNoControlCharacters(t *testing.T) {
	l := List{{Code: "RW100", Severity: Error, Pos: Pos{File: "p\n::error::forged.yaml", Line: 1, Column: 3}, Message: "bad \x1b[2J value\r"}}
	var b bytes.Buffer
	WriteText(&b, l, func(string) []string { return []string{"a:\x1b]0;title\x07 \x9b31m"} })
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "::") || strings.ContainsFunc(line, unicode.IsControl) {
			t.Errorf("line %q", line)
		}
	}
}

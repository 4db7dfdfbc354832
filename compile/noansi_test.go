package compile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Views live in internal/view: compile builds plans and writes no terminal
// colours (an ANSI escape in its code means a view crept back in).
func TestCompileWritesNoANSI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, esc := range []string{`\x1b[`, `\033[`, "\x1b["} {
			if strings.Contains(string(b), esc) {
				t.Errorf("%s writes an ANSI escape (%q): views belong in internal/view", f, esc)
			}
		}
	}
}

package compile

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var codeLiteral = regexp.MustCompile(`"(RW\d{3})"`)

// TestEveryCodeDocumented fails when Go code reports a diagnostic code that
// docs/diagnostics.md does not explain.
func TestEveryCodeDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, c := range documentedCodes(t) {
		documented[c] = true
	}
	used := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range codeLiteral.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 30 {
		t.Fatalf("found only %d codes in the code; the scan is broken", len(used))
	}
	for code, file := range used {
		if !documented[code] {
			t.Errorf("%s (used in %s) has no section in docs/diagnostics.md", code, file)
		}
	}
}

// Package golden is the test corpora's one comparison with a golden file:
// lint and decision cases, golden plans, generated docs.
package golden

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Check compares got with the file at path, or writes it there when update
// is set; rerun says how to update it (the command).
func Check(t testing.TB, path, got string, update bool, rerun string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s)", err, rerun)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (run %s to accept it)\n--- got\n%s\n--- want\n%s\n--- diff\n%s", path, rerun, got, want, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, a minimal aid for reading failures.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString(strconv.Itoa(i+1) + "\n  - " + wl + "\n  + " + gl + "\n")
		}
	}
	return b.String()
}

var codeHeading = regexp.MustCompile(`(?m)^### (RW\d{3})\b`)

// DocumentedCodes lists the diagnostic codes the reference at path (docs/
// diagnostics.md) documents, one `### RWxxx` heading each: the corpora
// require a case for each.
func DocumentedCodes(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, m := range codeHeading.FindAllStringSubmatch(string(b), -1) {
		codes = append(codes, m[1])
	}
	return codes
}

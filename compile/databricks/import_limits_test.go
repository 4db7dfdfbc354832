package databricks

import (
	"strings"
	"testing"
	"time"
)

// TestImportHugeInputs: inputs of the size rwc reads (MaxFileSize) import
// in seconds, without crashing: brackets nested a million deep (which
// overflowed the stack, walked quadratically before that) are refused at
// the first bracket too deep, and many diagnostics on one long line are
// positioned in linear time (each column was counted from the line's
// start).
func TestImportHugeInputs(t *testing.T) {
	n := 1 << 20
	head := "CREATE STREAMING TABLE t (d DATE) FLOW REPLACE WHERE d >= '2024-01-01' BY NAME SELECT "
	for name, src := range map[string]string{
		"nested calls": head + strings.Repeat("f(", n) + "d" + strings.Repeat(")", n) + " AS d FROM src;",
		"nested casts": head + strings.Repeat("CAST(", n/4) + "d" + strings.Repeat(" AS DATE)", n/4) + " AS d FROM src;",
		"one line":     strings.Repeat("SET x = 1;", n/2),
	} {
		start := time.Now()
		res := Import([]Input{{Name: "a.sql", Src: []byte(src)}}, Options{})
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s: %d bytes took %v", name, len(src), took)
		}
		if len(res.Diagnostics) == 0 {
			t.Errorf("%s: no diagnostic", name)
		}
		if strings.HasPrefix(name, "nested") && (res.Diagnostics[0].Code != "RW606" || !strings.Contains(res.Diagnostics[0].Message, "nest deeper")) {
			t.Errorf("%s: %v", name, res.Diagnostics[0])
		}
	}
}

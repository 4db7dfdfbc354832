package compile

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	goldenfile "github.com/rwc-dev/rwc/internal/golden"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/lint/*/want.txt from the current output")

// TestLintGolden runs lint over every testdata/lint/<case>/ directory (the
// case directory is the specs directory) and compares the text output with
// want.txt. A new case is a new directory; -update writes its want.txt.
func TestLintGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/lint/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no lint cases: %v", err)
	}
	fired := map[string]bool{}
	for _, dir := range cases {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			p, ds, err := Load(spec.DirFS(dir, spec.Repo{}), "pipelines")
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				fired[d.Code] = true
			}
			var got bytes.Buffer
			diag.WriteText(&got, ds, func(f string) []string { return p.Spec.Sources[f] })
			fmt.Fprintf(&got, "-- %s\n", ds.Summary())
			golden(t, filepath.Join(dir, "want.txt"), got.String())
		})
	}
	if len(cases) < 40 {
		t.Errorf("the lint corpus has %d cases; keep at least 40", len(cases))
	}
	// Every documented code is exercised by some case.
	var missing []string
	for _, code := range documentedCodes(t) {
		// RW5xx need a database: plan and apply tests cover them. RW6xx
		// are rwc import's and export's, never lint's: their golden cases
		// are compile/databricks/testdata/import/.
		if !fired[code] && code < "RW500" {
			missing = append(missing, code)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 && !*update {
		t.Errorf("no lint case fires %v: add a testdata/lint/<case>/ for each", missing)
	}
}

func documentedCodes(t *testing.T) []string {
	return goldenfile.DocumentedCodes(t, "../docs/diagnostics.md")
}

// golden is golden.Check with this package's -update flag.
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, got, *update, "go test ./compile -update")
}

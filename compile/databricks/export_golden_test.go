package databricks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/diag"
)

// TestExportGolden exports every testdata/export/<case>/pipelines/ and
// compares the files written (want/) and what does not carry (want.diag).
func TestExportGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/export/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no export cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := loadSpecs(t, filepath.Join(dir, "pipelines"))
			res, err := databricks.Export(p)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			diag.WriteText(&got, res.NotCarried, func(f string) []string { return p.Sources[f] })
			golden(t, filepath.Join(dir, "want.diag"), got.String())
			goldenFiles(t, filepath.Join(dir, "want"), res.Files)
			if !*update {
				// What it wrote imports back.
				var inputs []databricks.Input
				for _, f := range res.Files {
					inputs = append(inputs, databricks.Input{Name: filepath.Base(f.Path), Src: f.Content})
				}
				if back := databricks.Import(inputs, databricks.Options{At: importAt}); back.Diagnostics.HasErrors() {
					t.Errorf("the export does not import back: %v", back.Diagnostics)
				}
			}
		})
	}
}

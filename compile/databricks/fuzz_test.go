package databricks

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzImport: no input makes import panic, and an import without errors
// writes files, one with errors none.
func FuzzImport(f *testing.F) {
	for _, pattern := range []string{"testdata/import/*/input.sql", "testdata/import/*/overrides.json"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(filepath.Ext(p) == ".json", b)
		}
	}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, isJSON bool, src []byte) {
		name := "input.sql"
		if isJSON {
			name = "overrides.json"
		}
		res := Import([]Input{{Name: name, Src: src}}, Options{At: at})
		if res.Diagnostics.HasErrors() && len(res.Files) > 0 {
			t.Fatalf("files written despite errors: %v", res.Diagnostics)
		}
	})
}

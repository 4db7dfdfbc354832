package databricks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile/databricks"
)

// TestExportCommentsStayComments: a spec file's name is the pull
// request's to choose, newlines included; in the exported SQL's comments
// it must not end the comment and put the rest of the name in the SQL.
func TestExportCommentsStayComments(t *testing.T) {
	dir := t.TempDir()
	name := "x\nDROP TABLE y; --.yaml"
	spec := "pipeline: p\ntables:\n  t:\n    replace_where: d >= date('2024-01-01')\n    columns:\n      d: date\n      u: uuid\n" +
		"    query: SELECT d, u FROM src\n"
	if err := os.MkdirAll(filepath.Join(dir, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipelines", name), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := databricks.Export(loadSpecs(t, filepath.Join(dir, "pipelines")))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) == 0 {
		t.Fatal("nothing exported")
	}
	for _, f := range res.Files {
		for _, line := range strings.Split(string(f.Content), "\n") {

			if strings.Contains(line, "DROP") && !strings.HasPrefix(line, "-- ") {
				t.Errorf("%s: a line of the file name is SQL: %q", f.Path, line)
			}
		}
	}
}

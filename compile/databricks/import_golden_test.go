package databricks_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/diag"
	goldenfile "github.com/rwc-dev/rwc/internal/golden"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/import/*/want* from the current output")

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// importAt is the instant the corpus resolves current_date() in overrides.
var importAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// TestImportGolden imports every testdata/import/<case>/ (input.sql, and
// overrides.json when there is one) and compares the files written
// (want/) and the diagnostics (want.diag). A case with sources.sql has a
// database holding those sources, which types a table declared without a
// column list. What a case writes must lint without errors.
func TestImportGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/import/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no import cases: %v", err)
	}
	fired := map[string]bool{}
	for _, dir := range cases {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			res := importCase(t, dir)
			for _, d := range res.Diagnostics {
				fired[d.Code] = true
			}
			var got strings.Builder
			diag.WriteText(&got, res.Diagnostics, func(f string) []string { return sourceLines(dir, f) })
			golden(t, filepath.Join(dir, "want.diag"), got.String())
			want := filepath.Join(dir, "want")
			goldenFiles(t, want, res.Files)
			for _, f := range res.Files {
				formatted, err := spec.Format(f.Content, strings.HasPrefix(f.Path, spec.BackfillDir+"/"))
				if err != nil || string(formatted) != string(f.Content) {
					t.Errorf("%s is not in rwc fmt's format (%v)", f.Path, err)
				}
			}
			if len(res.Files) > 0 && !*update {
				_, ds, err := compile.Load(spec.DirFS(want, spec.Repo{}), "pipelines")
				if err != nil || ds.HasErrors() {
					var b strings.Builder
					diag.WriteText(&b, ds, nil)
					t.Errorf("the imported specs do not lint clean (%v):\n%s", err, b.String())
				}
			}
		})
	}
	// Every import code of docs/diagnostics.md has a case (RW620 is
	// export's: TestExportGolden).
	for _, code := range documentedCodes(t) {
		if strings.HasPrefix(code, "RW6") && code != "RW620" && !fired[code] && !*update {
			t.Errorf("no import case reports %s: add a testdata/import/<case>/", code)
		}
	}
}

func documentedCodes(t *testing.T) []string {
	return goldenfile.DocumentedCodes(t, "../../docs/diagnostics.md")
}

func importCase(t *testing.T, dir string) databricks.Result {
	t.Helper()
	var inputs []databricks.Input
	for _, n := range []string{"input.sql", "overrides.json"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err == nil {
			inputs = append(inputs, databricks.Input{Name: n, Src: b})
		}
	}
	opt := databricks.Options{Pipeline: filepath.Base(dir), At: importAt}
	if src, err := os.ReadFile(filepath.Join(dir, "sources.sql")); err == nil {
		db, _ := pgtest.DB(t)
		pgtest.Exec(t, db, string(src))
		opt.Describe = func(q string) ([]databricks.Column, error) {
			return run.DescribeQuery(context.Background(), db, q)
		}
	}
	return databricks.Import(inputs, opt)
}

func sourceLines(dir, file string) []string {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil
	}
	return strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
}

// goldenFiles compares files with the golden directory want, which holds
// them and no other (-update rewrites it).
func goldenFiles(t *testing.T, want string, files []databricks.File) {
	t.Helper()
	if *update {
		os.RemoveAll(want)
	}
	var paths []string
	for _, f := range files {
		path := filepath.Join(want, f.Path)
		paths = append(paths, f.Path)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		golden(t, path, string(f.Content))
	}
	if !*update {
		checkNoOtherFiles(t, want, paths)
	}
}

func checkNoOtherFiles(t *testing.T, want string, paths []string) {
	t.Helper()
	var found []string
	filepath.WalkDir(want, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(want, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(found)
	sort.Strings(paths)
	if strings.Join(found, ",") != strings.Join(paths, ",") {
		t.Errorf("want/ holds %v, the import wrote %v", found, paths)
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, got, *update, "go test ./compile/databricks -run Import -update")
}

package compile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rwc-dev/rwc/spec"
)

// TestFormatKeepsMeaning: rwc fmt (spec.Format) of every example pipeline
// and every clean lint case compiles to the same flows and backfills —
// predicates, columns, keys, indexes, properties, queries (text and
// fingerprint) — and formatting the output again changes nothing.
func TestFormatKeepsMeaning(t *testing.T) {
	dirs := []string{"../pipelines"}
	cases, _ := filepath.Glob("testdata/lint/*")
	for _, c := range cases {
		if b := filepath.Base(c); strings.HasPrefix(b, "clean_") || strings.HasPrefix(b, "example_") {
			dirs = append(dirs, c)
		}
	}
	if len(dirs) < 5 {
		t.Fatalf("only %d spec directories", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			orig, ds, err := Load(spec.DirFS(dir, spec.Repo{}), "pipelines")
			if err != nil || ds.HasErrors() {
				t.Fatalf("%v %v", err, ds)
			}
			formatted := fstest.MapFS{}
			for _, pattern := range []string{"*.yaml", spec.BackfillDir + "/*.yaml"} {
				files, _ := fs.Glob(os.DirFS(dir), pattern)
				for _, f := range files {
					src, err := os.ReadFile(filepath.Join(dir, f))
					if err != nil {
						t.Fatal(err)
					}
					out, err := spec.Format(src, strings.HasPrefix(f, spec.BackfillDir+"/"))
					if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					again, err := spec.Format(out, strings.HasPrefix(f, spec.BackfillDir+"/"))
					if err != nil || string(again) != string(out) {
						t.Errorf("%s: fmt of fmt differs (%v):\n%s\n---\n%s", f, err, out, again)
					}
					formatted[f] = &fstest.MapFile{Data: out}
				}
			}
			got, ds, err := Load(formatted, "pipelines")
			if err != nil || ds.HasErrors() {
				t.Fatalf("the formatted specs: %v %v", err, ds)
			}
			if a, b := meaning(orig), meaning(got); a != b {
				t.Errorf("formatting changed the specs' meaning:\n%s\n---\n%s", a, b)
			}
		})
	}
}

// meaning is what a project says, without positions.
func meaning(p *Project) string {
	var b strings.Builder
	for _, f := range p.Flows {
		t := f.Table
		fmt.Fprintf(&b, "flow %s pipeline %s schema %s\n", f.Name(), t.Pipeline.Name, t.Pipeline.Schema)
		fmt.Fprintf(&b, "  where %q partition %q reset_allowed %v\n", t.ReplaceWhere.Value, f.PartitionBy, t.ResetAllowed)
		for _, c := range t.Columns {
			fmt.Fprintf(&b, "  column %s %s\n", c.Name, c.Type.Canonical)
		}
		if t.PrimaryKey != nil {
			fmt.Fprintf(&b, "  primary key %v\n", t.PrimaryKey.Columns)
		}
		fmt.Fprintf(&b, "  indexes declared %v\n", t.IndexesDeclared)
		for _, ix := range t.Indexes {
			fmt.Fprintf(&b, "  index %v unique %v using %q where %q\n", ix.Columns, ix.Unique, ix.Using, ix.Where.Value)
		}
		for _, e := range f.Expectations {
			fmt.Fprintf(&b, "  expect %s %s\n", e.Name, e.Definition())
		}
		fmt.Fprintf(&b, "  query %q\n  fingerprint %s\n", t.Query.Value, f.Fingerprint())
		var deps []string
		for _, d := range f.DependsOn {
			deps = append(deps, d.Name())
		}
		fmt.Fprintf(&b, "  depends on %v\n", deps)
	}
	for _, bf := range p.Backfills {
		fmt.Fprintf(&b, "backfill %s flow %s where %q reason %q batch %d allow_loss %v\n", bf.File.File, bf.File.Flow, bf.File.Where.Value, bf.File.Reason, bf.File.BatchDays, bf.File.AllowLoss)
	}
	return b.String()
}

package databricks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

// TestRoundTrip exports every example pipeline (and backfill file) and
// imports the export: the specs must come back as they were, field by field
// (comments and a backfill's reason do not travel).
func TestRoundTrip(t *testing.T) {
	orig := loadSpecs(t, "../../pipelines")
	if len(orig.Pipelines) < 5 {
		t.Fatalf("found %d example pipelines", len(orig.Pipelines))
	}
	exp, err := databricks.Export(orig)
	if err != nil {
		t.Fatal(err)
	}
	// What the examples have that Databricks does not: the backfill's
	// batches (an override is one update).
	var nc []string
	for _, d := range exp.NotCarried {
		nc = append(nc, d.String())
	}
	if got, want := strings.Join(nc, "\n"), "pipelines/backfills/2026-11-01-clickstream_daily.yaml:5:8: warning RW620: batch: 7d is not carried"; got != want {
		t.Errorf("not carried:\n%s\nwant:\n%s", got, want)
	}
	var inputs []databricks.Input
	for _, f := range exp.Files {
		name := f.Path
		if strings.HasSuffix(name, ".json") {
			name = filepath.Base(name)
		}
		inputs = append(inputs, databricks.Input{Name: name, Src: f.Content})
	}
	res := databricks.Import(inputs, databricks.Options{At: importAt})
	for _, d := range res.Diagnostics {
		t.Errorf("importing the export: %s", d)
	}
	dir := t.TempDir()
	for _, f := range res.Files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	back := loadSpecs(t, dir)
	if got, want := specSummary(back), specSummary(orig); got != want {
		t.Errorf("import(export(spec)) differs from the spec:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

func loadSpecs(t *testing.T, dir string) *spec.Project {
	t.Helper()
	p, ds := spec.Load(spec.DirFS(dir, spec.Repo{}), "pipelines")
	if ds.HasErrors() {
		var b strings.Builder
		diag.WriteText(&b, ds, nil)
		t.Fatalf("%s does not load:\n%s", dir, b.String())
	}
	return p
}

// specSummary is every field a round trip must keep, one per line.
func specSummary(p *spec.Project) string {
	var b strings.Builder
	for _, pl := range p.Pipelines {
		b.WriteString("pipeline " + pl.Name + " schema " + pl.Schema + "\n")
		for _, t := range pl.Tables {
			b.WriteString("  table " + t.Name + "\n    replace_where: " + t.ReplaceWhere.Value + "\n")
			if !t.ResetAllowed {
				b.WriteString("    reset_allowed: false\n")
			}
			for _, c := range t.Columns {
				b.WriteString("    column " + c.Name + " " + c.Type.Canonical + "\n")
			}
			if t.PrimaryKey != nil {
				b.WriteString("    primary_key " + strings.Join(t.PrimaryKey.Columns, ",") + "\n")
			}
			if t.Partitioning != nil {
				b.WriteString("    partitioning " + t.Partitioning.By + " " + t.Partitioning.Interval + "\n")
			}
			b.WriteString("    query:\n" + strings.TrimSpace(t.Query.Value) + "\n")
		}
	}
	for _, bf := range p.Backfills {
		b.WriteString("backfill " + bf.Flow + " where " + bf.Where.Value + "\n")
	}
	return b.String()
}

package scaffold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rwc-dev/rwc/compile"
)

// TestWorkflowIsTheRecipe: rwc init writes docs/ci.md's workflow, copied.
func TestWorkflowIsTheRecipe(t *testing.T) {
	want, err := os.ReadFile("../../docs/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Workflow, want) {
		t.Error("internal/scaffold/github-actions.yml differs from docs/ci/github-actions.yml: copy it again (cp docs/ci/github-actions.yml internal/scaffold/)")
	}
}

// TestExampleLintsClean: the sample pipeline has no diagnostics at all.
func TestExampleLintsClean(t *testing.T) {
	_, ds, err := compile.Load(fstest.MapFS{"example.yaml": {Data: Example}}, "pipelines")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) > 0 {
		t.Errorf("the sample pipeline has diagnostics: %v", ds)
	}
}

func TestGitignore(t *testing.T) {
	for in, want := range map[string]string{
		"":                ".rwc/\n",
		"bin/":            "bin/\n.rwc/\n",
		"bin/\n/.rwc\n":   "bin/\n/.rwc\n",
		"node_modules/\n": "node_modules/\n.rwc/\n",
	} {
		got, _ := Gitignore([]byte(in))
		if string(got) != want {
			t.Errorf("Gitignore(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSchemaRef(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	bf := filepath.Join(root, "specs", "backfills")
	if err := os.MkdirAll(bf, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := SchemaRef(bf, "backfill.schema.json"); got != "" {
		t.Errorf("no schemas: %q", got)
	}
	if err := os.MkdirAll(filepath.Join(root, SchemaDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, SchemaDir, "backfill.schema.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := SchemaRef(bf, "backfill.schema.json"); got != "../../.rwc-schemas/backfill.schema.json" {
		t.Errorf("got %q", got)
	}
}

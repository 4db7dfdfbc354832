package scaffold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rwc-dev/rwc/compile"
)

// TestWorkflowIsTheRecipe: rwc init writes docs/ci.md's workflows, copied.
func TestWorkflowIsTheRecipe(t *testing.T) {
	for name, got := range map[string][]byte{"github-actions.yml": Workflow, "github-actions-comment.yml": CommentWorkflow} {
		want, err := os.ReadFile("../../docs/ci/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("internal/scaffold/%s differs from docs/ci/%[1]s: copy it again (cp docs/ci/%[1]s internal/scaffold/)", name)
		}
	}
}

// TestWorkflowFor: a release pins itself in the workflow it writes; any
// other build leaves the recipe's pin.
func TestWorkflowFor(t *testing.T) {
	if n := len(rwcVersionLine.FindAll(Workflow, -1)); n != 1 {
		t.Fatalf("the workflow has %d RWC_VERSION lines, want 1", n)
	}
	got := WorkflowFor("4.5.6")
	if !bytes.Contains(got, []byte("\n  RWC_VERSION: \"4.5.6\"")) || !bytes.Equal(rwcVersionLine.ReplaceAll(got, nil), rwcVersionLine.ReplaceAll(Workflow, nil)) {
		t.Errorf("WorkflowFor(4.5.6) changed more than the pin, or not the pin")
	}
	for _, v := range []string{"dev", "0.0.0-118dc86abcde", "0.0.0-118dc86abcde+dirty", "0.0.0", "1.2"} {
		if !bytes.Equal(WorkflowFor(v), Workflow) {
			t.Errorf("WorkflowFor(%q) changed the workflow", v)
		}
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

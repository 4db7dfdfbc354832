package compile_test

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/internal/bigproject"
)

func loadBig(tb testing.TB, m fstest.MapFS) *compile.Project {
	tb.Helper()
	p, ds, err := compile.Load(m, "pipelines")
	if err != nil {
		tb.Fatal(err)
	}
	if ds.HasErrors() {
		tb.Fatalf("generated specs have errors:\n%v", ds)
	}
	return p
}

// TestPlan500Corpus keeps the benchmark's generated project honest: it
// loads without errors and plans to the expected changes (no timing here).
func TestPlan500Corpus(t *testing.T) {
	head := loadBig(t, bigproject.Files(25, 20, true))
	base := loadBig(t, bigproject.Files(25, 20, false))
	if len(head.Flows) != 500 {
		t.Fatalf("%d flows, want 500", len(head.Flows))
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p, err := compile.BuildPlan(compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree"}, Base: base,
		BaseRev: compile.Rev{Source: "git"}, At: at, Definitions: diff.Classify(base, head, at, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary.Flows != 500 || p.Summary.DefinitionChanges != 100 {
		t.Errorf("plan: %d flows, %d changed; want 500, 100", p.Summary.Flows, p.Summary.DefinitionChanges)
	}
}

// BenchmarkPlan500 measures what `rwc plan --base REV` computes for a
// 500-flow project: loading and analysing head and base (YAML, JSON
// Schema, CEL, the PostgreSQL parser) and building the plan (containment,
// window deltas, SQL with push-down). Reading git is not included.
func BenchmarkPlan500(b *testing.B) {
	headFS, baseFS := bigproject.Files(25, 20, true), bigproject.Files(25, 20, false)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		head, base := loadBig(b, headFS), loadBig(b, baseFS)
		if _, err := compile.BuildPlan(compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree"}, Base: base,
			BaseRev: compile.Rev{Source: "git"}, At: at, Definitions: diff.Classify(base, head, at, nil)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan500BuildPlan is classifying and BuildPlan alone, head and
// base loaded once.
func BenchmarkPlan500BuildPlan(b *testing.B) {
	head, base := loadBig(b, bigproject.Files(25, 20, true)), loadBig(b, bigproject.Files(25, 20, false))
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile.BuildPlan(compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree"}, Base: base,
			BaseRev: compile.Rev{Source: "git"}, At: at, Definitions: diff.Classify(base, head, at, nil)}); err != nil {
			b.Fatal(err)
		}
	}
}

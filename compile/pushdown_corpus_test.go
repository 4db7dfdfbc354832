package compile

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Every flow of the lint corpus whose predicate lint finds pushable is
// pushed down when its statements are rendered: the deparsed query must
// parse back to the tree rwc built (see query.WithConditions), and a
// difference there silently costs each refresh a full scan.
func TestCorpusPushdownSurvivesDeparse(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/lint/*")
	checked := 0
	for _, dir := range dirs {
		p, ds, err := Load(spec.DirFS(dir, spec.Repo{}), "pipelines")
		if err != nil || ds.HasErrors() {
			continue
		}
		for _, f := range p.Flows {
			if f.Query == nil || f.Predicate == nil || f.Predicate.Determinism == predicate.NonDeterministic || len(f.Query.Pushable(f.Predicate.Columns)) == 0 {
				continue
			}
			r, err := f.Predicate.Resolve(predicate.Resolution{Now: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), Zone: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			s, err := f.Statements(r, false, Observation{})
			if err != nil {
				t.Fatal(err)
			}
			checked++
			if len(s.PushedTo) == 0 {
				t.Errorf("%s: flow %s: pushable, but not pushed down", dir, f.Name())
			}
		}
	}
	t.Logf("%d flows pushed down", checked)
	if checked < 10 {
		t.Errorf("only %d flows checked", checked)
	}
}

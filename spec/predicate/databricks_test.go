package predicate_test

import (
	"testing"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// TestDatabricksRoundTrip: every predicate the differential test generates
// (all column types, awkward literals, nested date arithmetic, moving
// windows), exported to Spark SQL and imported back, is proved equal to
// the original both ways by Contains, at every resolution, and evaluates
// alike on the differential test's rows. The test is here, not in
// compile/databricks, to reuse that generator.
func TestDatabricksRoundTrip(t *testing.T) {
	g := predicate.NewGen(20260601, 4)
	cols := predicate.DiffColumns(t)
	rows := g.Rows(150)
	checked := 0
	for range 800 {
		text := g.Predicate()
		p1, issues := predicate.Compile(text, cols)
		if len(issues) > 0 {
			continue
		}
		spark, err := databricks.ExportPredicate(p1)
		if err != nil {
			t.Fatalf("export %s: %v", text, err)
		}
		cel, ds := databricks.ImportPredicate(spark, cols)
		if len(ds) > 0 {
			t.Fatalf("CEL  %s\nSpark %s\ndoes not import: %v", text, spark, ds)
		}
		p2, issues := predicate.Compile(cel, cols)
		if len(issues) > 0 {
			t.Fatalf("CEL  %s\nSpark %s\nimported %s, which does not compile: %v", text, spark, cel, issues)
		}
		checked++
		for _, rc := range g.Resolutions() {
			r1, err1 := p1.Resolve(rc)
			r2, err2 := p2.Resolve(rc)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s: resolving at %v: %v, its round trip %s: %v", text, rc.Now, err1, cel, err2)
			}
			if err1 != nil {
				continue // date arithmetic out of range: both refuse
			}
			if !predicate.Contains(r1, r2) || !predicate.Contains(r2, r1) {
				t.Fatalf("not proved equivalent at %v:\nCEL      %s\nSpark    %s\nimported %s", rc.Now, text, spark, cel)
			}
			for _, row := range rows {
				a, errA := p1.Eval(row, rc)
				b, errB := p2.Eval(row, rc)
				if a != b || (errA == nil) != (errB == nil) {
					t.Fatalf("row %v at %v: %s gives %v (%v), its round trip %s gives %v (%v)", row, rc.Now, text, a, errA, cel, b, errB)
				}
			}
		}
	}
	t.Logf("%d predicates round-tripped, each at %d resolutions on %d rows", checked, len(g.Resolutions()), len(rows))
	if checked < 400 {
		t.Errorf("only %d of 800 generated predicates compiled", checked)
	}
}

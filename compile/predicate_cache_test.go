package compile

import (
	"testing"
	"testing/fstest"
)

// A predicate CompilePredicate compiled before is the same one again (a
// partitioned target's writes compile each partition's range twice); one
// with issues is compiled, and reported, each time.
func TestCompilePredicateCaches(t *testing.T) {
	spec := "pipeline: p\ntables:\n  t:\n    replace_where: d >= date_add(current_date(), -6)\n    columns:\n      d: date\n      k: text\n    query: SELECT d, k FROM ev\n"
	p, ds, err := Load(fstest.MapFS{"p.yaml": {Data: []byte(spec)}}, "pipelines")
	if err != nil || ds.HasErrors() {
		t.Fatalf("%v %v", err, ds)
	}
	f := p.Flow("t")
	a, _ := f.CompilePredicate("d >= date('2026-03-08') && d < date('2026-03-09')")
	b, _ := f.CompilePredicate("d >= date('2026-03-08') && d < date('2026-03-09')")
	if a == nil || a != b {
		t.Errorf("compiled twice: %p, %p", a, b)
	}
	for range 2 {
		if _, issues := f.CompilePredicate("nope > 1"); len(issues) == 0 {
			t.Errorf("an unknown column compiled without issues")
		}
	}
}

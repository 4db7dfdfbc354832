package spec

import (
	"testing"
	"testing/fstest"
)

// A boolean is read as the JSON Schema reads it: YAML's True and TRUE are
// true too (the schema validated them as booleans), not false.
func TestBooleansAsYAMLReadsThem(t *testing.T) {
	for _, yes := range []string{"true", "True", "TRUE"} {
		fsys := fstest.MapFS{
			"p.yaml": {Data: []byte(`pipeline: p
tables:
  t:
    replace_where: d >= date('2026-03-05')
    properties:
      reset_allowed: ` + yes + `
    columns:
      d: date
      k: text
    indexes:
      - columns: [d, k]
        unique: ` + yes + `
    query: SELECT d, k FROM ev
`)},
			"backfills/b.yaml": {Data: []byte(`backfill: t
where: d >= date('2026-01-01') && d < date('2026-02-01')
reason: test
allow_loss: ` + yes + `
`)},
		}
		p, ds := Load(fsys, "pipelines")
		if ds.HasErrors() {
			t.Fatalf("%s: %v", yes, ds)
		}
		tb := p.Pipelines[0].Tables[0]
		if !tb.ResetAllowed {
			t.Errorf("reset_allowed: %s read as false", yes)
		}
		if !tb.Indexes[0].Unique {
			t.Errorf("unique: %s read as false", yes)
		}
		if len(p.Backfills) != 1 || !p.Backfills[0].AllowLoss {
			t.Errorf("allow_loss: %s read as false", yes)
		}
	}
}

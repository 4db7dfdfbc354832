package run_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// TestIdentifyBackfills: what the ledger says each backfill file is, with
// the ledger and the deployments written directly. Content "A" is the
// applied file a.yaml of flow f; the cases vary what the specs hold now
// and what the last deployment held.
func TestIdentifyBackfills(t *testing.T) {
	h := func(content string) string { return run.BackfillJob{Content: content}.Hash() }
	type file = run.BackfillFile
	type id = run.BackfillIdentity
	const a, b, n = "p/backfills/a.yaml", "p/backfills/b.yaml", "p/backfills/new.yaml"
	cases := []struct {
		name     string
		deployed map[string]string // the last deployment's specs; nil: a.yaml started after it
		none     bool              // no deployment at all
		finished bool
		files    []file
		want     []id
	}{
		{"unchanged", map[string]string{a: "A"}, false, true,
			[]file{{a, h("A"), "f"}}, []id{{compile.BackfillApplied, a}}},
		{"edited in place", map[string]string{a: "A"}, false, true,
			[]file{{a, h("A2"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"renamed", map[string]string{a: "A"}, false, true,
			[]file{{b, h("A"), "f"}}, []id{{compile.BackfillApplied, a}}},
		{"renamed and edited", map[string]string{a: "A"}, false, true,
			[]file{{b, h("A2"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"the rename deployed, then edited", map[string]string{b: "A"}, false, true,
			[]file{{b, h("A2"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"started, never deployed, renamed and edited", nil, false, false,
			[]file{{b, h("A2"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"no deployment recorded, renamed and edited", nil, true, false,
			[]file{{b, h("A2"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"new next to the applied one", map[string]string{a: "A"}, false, true,
			[]file{{a, h("A"), "f"}, {n, h("N"), "f"}}, []id{{compile.BackfillApplied, a}, {compile.BackfillPending, ""}}},
		{"a copy next to the applied one", map[string]string{a: "A"}, false, true,
			[]file{{a, h("A"), "f"}, {b, h("A"), "f"}}, []id{{compile.BackfillApplied, a}, {compile.BackfillPending, ""}}},
		{"new for another flow", map[string]string{a: "A"}, false, true,
			[]file{{n, h("N"), "g"}}, []id{{compile.BackfillPending, ""}}},
		{"deleted and a new one added", map[string]string{a: "A"}, false, true,
			[]file{{n, h("N"), "f"}}, []id{{compile.BackfillChanged, a}}},
		{"new after the deletion was deployed", map[string]string{"p/views.yaml": "V"}, false, true,
			[]file{{n, h("N"), "f"}}, []id{{compile.BackfillPending, ""}}},
		{"partial, renamed", map[string]string{a: "A"}, false, false,
			[]file{{b, h("A"), "f"}}, []id{{compile.BackfillPartial, a}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if !c.none && c.deployed == nil {
				e.exec(`INSERT INTO rwc.deployments (deployed_by, specs) VALUES ('t', '{}')`)
			}
			e.exec(`INSERT INTO rwc.backfills (path, content_hash, flow, reason, finished_at)
				VALUES ($1, $2, 'f', 'r', CASE WHEN $3 THEN clock_timestamp() END)`, a, h("A"), c.finished)
			if c.deployed != nil {
				specs, err := json.Marshal(c.deployed)
				if err != nil {
					t.Fatal(err)
				}
				e.exec(`INSERT INTO rwc.deployments (deployed_by, specs) VALUES ('t', $1)`, string(specs))
			}
			got, err := run.IdentifyBackfills(context.Background(), e.db, c.files)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s: got %+v, want %+v", c.files[i].Key, got[i], c.want[i])
				}
			}
		})
	}
}

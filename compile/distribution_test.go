package compile

import (
	"strings"
	"testing"
)

// An incremental write into a target Citus distributes inserts without
// RETURNING (which would ship every inserted row back to the coordinator,
// to be counted): its partitions are fingerprinted after the write
// instead. Into a local target, it returns the rows per partition.
func TestDistributedIncrementalInsert(t *testing.T) {
	f := indexFlow(t, "")
	narrowed, issues := f.CompilePredicate("d == date('2026-03-09')")
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	dec := Decision{Action: ActionIncremental, Narrowed: narrowed, Partitions: []string{"2026-03-09"}}
	for _, c := range []struct {
		name      string
		obs       Observation
		returning bool
	}{
		{"local", Observation{}, true},
		{"distributed", Observation{Citus: true, Distributed: []string{f.Target()}}, false},
	} {
		s, err := f.Writes(dec, narrowed, false, c.obs)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(s.Insert, "RETURNING"); got != c.returning || s.PerPartition != c.returning {
			t.Errorf("%s: RETURNING %v, PerPartition %v, want %v:\n%s", c.name, got, s.PerPartition, c.returning, s.Insert)
		}
	}
}

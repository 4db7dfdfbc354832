package compile

import (
	"strings"
	"testing"
)

// An incremental write into a target Citus distributes inserts without
// RETURNING (which would ship every inserted row back to the coordinator,
// to be counted): its partitions are fingerprinted after the write
// instead. Into a local target, it returns the rows per partition, unless
// it writes one partition value: its command tag counts that one.
func TestDistributedIncrementalInsert(t *testing.T) {
	f := indexFlow(t, "")
	for _, c := range []struct {
		name, narrowed string
		values         []string
		obs            Observation
		returning      bool
		value          string
	}{
		{"local, one day", "d == date('2026-03-09')", []string{"2026-03-09"}, Observation{}, false, "2026-03-09"},
		{"local, two days", "d in [date('2026-03-09'), date('2026-03-10')]", []string{"2026-03-09", "2026-03-10"}, Observation{}, true, ""},
		{"distributed", "d == date('2026-03-09')", []string{"2026-03-09"}, Observation{Citus: true, Distributed: []string{f.Target()}}, false, ""},
	} {
		narrowed, issues := f.CompilePredicate(c.narrowed)
		if len(issues) > 0 {
			t.Fatal(issues)
		}
		dec := Decision{Action: ActionIncremental, Narrowed: narrowed, Partitions: c.values}
		s, err := f.Writes(dec, narrowed, false, c.obs)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(s.Insert, "RETURNING"); got != c.returning || s.Counted != (Counted{PerValue: c.returning, Value: c.value}) {
			t.Errorf("%s: RETURNING %v, counted %+v; want %v, %q:\n%s", c.name, got, s.Counted, c.returning, c.value, s.Insert)
		}
	}
}

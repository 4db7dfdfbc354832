package compile_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func expectFlow(t *testing.T, expect string) *compile.Flow {
	t.Helper()
	spec := "pipeline: p\ntables:\n  t:\n    replace_where: d >= date('2026-03-01')\n    columns:\n      d: date\n      k: text\n      v: integer\n" +
		"    query: SELECT d, k, v FROM ev\n    expect:\n" + expect
	return loadMap(t, fstest.MapFS{"p.yaml": {Data: []byte(spec)}}).Flow("t")
}

// What changed in a flow's expectations: added, removed, changed (what it
// checks, or its severity), and nothing for the same definition written
// another way.
func TestExpectationChanges(t *testing.T) {
	old := expectFlow(t, "      a:\n        check: v >= 0\n      b:\n        not_null: [k]\n      c:\n        unique: [d, k]\n      d:\n        rows: {min: 1}\n")
	f := expectFlow(t, "      a:\n        check: \"v   >=  0\"\n      b:\n        not_null: [k]\n        severity: warn\n      c:\n        unique: [d, k]\n        across_table: true\n      e:\n        check: k != null\n")
	if got := fmt.Sprint(f.ExpectationChanges(old)); got != "expectation_changed:b, expectation_changed:c, expectation_added:e, expectation_removed:d" {
		t.Errorf("changes %s", got)
	}
	if got := fmt.Sprint(f.ExpectationChanges(f)); got != "" {
		t.Errorf("changes against itself: %s", got)
	}
}

// A check whose string literal changed only in its spaces checks other
// rows: the plan says it changed.
func TestExpectationChangesInsideStrings(t *testing.T) {
	old := expectFlow(t, "      a:\n        check: k != 'a  b'\n      b:\n        check: \"k != \\\"x\\\\\\\"  y\\\"\"\n")
	f := expectFlow(t, "      a:\n        check: k   !=   'a b'\n      b:\n        check: \"k  != \\\"x\\\\\\\"  y\\\"\"\n")
	if got := fmt.Sprint(f.ExpectationChanges(old)); got != "expectation_changed:a" {
		t.Errorf("changes %s, want a's check changed (its string) and b's not (spaces outside its string)", got)
	}
}

// One pass for the row checks, not_null and a unique key that holds the
// partition column (two counts per partition); a unique key without it
// and relationships apart; rows.max_change per partition, with a count
// before the write.
func TestChecksSQL(t *testing.T) {
	f := expectFlow(t, "      c:\n        unique: [d, k]\n      a:\n        check: v >= 0\n      b:\n        not_null: [k]\n      r:\n        relationships: {column: k, to: dim.k}\n      n:\n        rows: {max_change: 50%}\n      u:\n        unique: [k]\n")
	s, err := f.Statements(f.Predicate, false, compile.Observation{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Checks(s, predicateNow())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Before, `SELECT ("d")::text, count(*) FROM "public"."t" WHERE ("d" >= DATE '2026-03-01') GROUP BY "d"`) {
		t.Errorf("before: %s", c.Before)
	}
	pass := `count(*) FILTER (WHERE NOT ("v" >= 0)), count(*) FILTER (WHERE "k" IS NULL), count(*) FILTER (WHERE "d" IS NOT NULL AND "k" IS NOT NULL), count(DISTINCT "k") FILTER (WHERE "d" IS NOT NULL AND "k" IS NOT NULL) FROM (`
	if !strings.Contains(c.Rows, pass) || !strings.HasSuffix(c.Rows, `) AS w GROUP BY "d"`) {
		t.Errorf("rows: %s", c.Rows)
	}
	if fmt.Sprint(c.RowsFor) != "[1 2]" || len(c.DistinctFor) != 1 || c.DistinctFor[0].For != 0 || len(c.Apart) != 2 || c.Apart[0].For != 3 || c.Apart[1].For != 5 {
		t.Errorf("rows for %v, distinct for %+v, apart %+v", c.RowsFor, c.DistinctFor, c.Apart)
	}
	if c.Counts() != 5 {
		t.Errorf("counts %d, want the row count, 2 failing counts, 2 of the key", c.Counts())
	}
	// The key's exact count is read only where a partition's key repeats.
	clean := map[string][]int64{"2026-03-01": {3, 0, 0, 3, 3}, "2026-03-02": {2, 0, 0, 1, 1}}
	if q := c.Repeated(clean); len(q) != 0 {
		t.Errorf("repeated in %v: %+v", clean, q)
	}
	clean["2026-03-02"] = []int64{2, 0, 0, 2, 1}
	if q := c.Repeated(clean); len(q) != 1 || q[0].For != 0 {
		t.Errorf("repeated in %v: %+v, want c's query", clean, q)
	}
	if c.Samples[4] != "" || c.Samples[0] == "" || c.Samples[1] == "" || c.Samples[3] == "" {
		t.Errorf("samples %q", c.Samples)
	}
	// Nothing written, nothing checked.
	if c, err := f.Checks(compile.Statements{}, predicateNow()); err != nil || len(c.After()) != 0 || c.Before != "" {
		t.Errorf("checks of no write: %+v, %v", c, err)
	}
}

func predicateNow() predicate.Resolution {
	return predicate.Resolution{Now: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), Zone: time.UTC}
}

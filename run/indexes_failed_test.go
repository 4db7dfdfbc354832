package run_test

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// A refresh that fails on the user's mistake (its query reads a table
// that does not exist) changes nothing: not the target's indexes either.
func TestIndexesUnchangedWhenTheRefreshFails(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    indexes:\n      - columns: [v]\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	before := e.indexesOf("t")
	spec := indexSpec("    indexes:\n      - columns: [k]\n")
	spec["p.yaml"] = strings.Replace(spec["p.yaml"], "FROM ev", "FROM ev JOIN nope USING (k)", 1)
	f2 := flow(t, spec, "t")
	if err := e.runner(now0).Refresh(context.Background(), reqWindow(f2)).Err; err == nil {
		t.Fatal("the refresh of a query reading a missing table succeeded")
	} else {
		t.Logf("refused: %v", err)
	}
	if after := e.indexesOf("t"); !slices.Equal(before, after) {
		t.Errorf("a failed refresh changed the target's indexes:\nbefore %v\nafter  %v", before, after)
	}
}

// The same through rwc apply: it reports the flow failed and its target
// unchanged, and must leave its indexes as they were.
func TestApplyIndexesUnchangedWhenTheRefreshFails(t *testing.T) {
	rwcBinary(t)
	e := newDailyEnv(t)
	mustApply(t, e, writeSpecs(t, indexSpec("    indexes:\n      - columns: [v]\n")))
	before := e.indexesOf("t")
	spec := indexSpec("    indexes:\n      - columns: [k]\n")
	spec["p.yaml"] = strings.Replace(spec["p.yaml"], "FROM ev", "FROM ev JOIN nope USING (k)", 1)
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", writeSpecs(t, spec))
	if code == 0 {
		t.Fatalf("rwc apply of a query reading a missing table succeeded:\n%s", out)
	}
	t.Logf("exit %d:\n%s", code, out)
	if after := e.indexesOf("t"); !slices.Equal(before, after) {
		t.Errorf("a failed apply changed the target's indexes:\nbefore %v\nafter  %v", before, after)
	}
}

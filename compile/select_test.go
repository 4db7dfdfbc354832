package compile

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestSelect: dbt's selectors over a chain a → b → c (b reads a's target,
// c reads b's) and a lone d; the selection is in dependency order.
func TestSelect(t *testing.T) {
	p := chain(t)
	for sel, want := range map[string]string{
		"b":                "b",
		"+b":               "a b",
		"b+":               "b c",
		"+b+":              "a b c",
		"c a":              "a c",
		"pipeline:lone":    "d",
		"pipeline:chain,d": "a b c d",
		"+c d":             "a b c d",
		"pipeline:chain+":  "a b c",
		"+pipeline:lone":   "d",
	} {
		s, err := Select(p, []string{sel})
		if err != nil {
			t.Errorf("%s: %v", sel, err)
			continue
		}
		var got []string
		for _, f := range s.Flows {
			got = append(got, f.Name())
		}
		if strings.Join(got, " ") != want {
			t.Errorf("--select %s = %v, want %s", sel, got, want)
		}
	}
}

// TestCheckOrder: leaving out an upstream flow is refused only when that
// flow (or one further up) has an undeployed definition.
func TestCheckOrder(t *testing.T) {
	p := chain(t)
	c, _ := Select(p, []string{"c"})
	if err := c.CheckOrder(map[string]string{}); err != nil {
		t.Errorf("all deployed: %v", err)
	}
	err := c.CheckOrder(map[string]string{"a": "column_added:x"})
	if err == nil || !strings.Contains(err.Error(), "c reads the target of a (column_added:x), not deployed yet and not selected: select it too, with --select +c") {
		t.Errorf("a changed, c alone: %v", err)
	}
	bc, _ := Select(p, []string{"b+"})
	if err := bc.CheckOrder(map[string]string{"b": "new", "c": "new"}); err != nil {
		t.Errorf("b and c new, both selected: %v", err)
	}
	if err := (*Selection)(nil).CheckOrder(map[string]string{"a": "new"}); err != nil {
		t.Errorf("no selection: %v", err)
	}
}

func chain(t *testing.T) *Project {
	t.Helper()
	flow := func(name, from string) string {
		return "  " + name + ":\n    replace_where: d >= date('2026-01-01')\n    columns:\n      d: date\n    query: SELECT d FROM " + from + "\n"
	}
	fs := fstest.MapFS{
		"chain.yaml": {Data: []byte("pipeline: chain\ntables:\n" + flow("c", "b") + flow("b", "a") + flow("a", "src"))},
		"lone.yaml":  {Data: []byte("pipeline: lone\ntables:\n" + flow("d", "src"))},
	}
	p, ds, err := Load(fs, "pipelines")
	if err != nil || ds.HasErrors() {
		t.Fatalf("%v %v", err, ds)
	}
	return p
}

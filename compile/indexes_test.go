package compile

import (
	"strings"
	"testing"
	"testing/fstest"
)

func indexFlow(t *testing.T, keys string) *Flow {
	t.Helper()
	spec := "pipeline: p\ntables:\n  t:\n    replace_where: d >= date_add(current_date(), -2)\n    columns:\n      d: date\n      k: text\n" + keys + "    query: SELECT d, k FROM ev\n"
	p, ds, err := Load(fstest.MapFS{"p.yaml": {Data: []byte(spec)}}, "pipelines")
	if err != nil || ds.HasErrors() {
		t.Fatalf("%v %v", err, ds)
	}
	return p.Flow("t")
}

func kinds(cs []IndexChange) string {
	var out []string
	for _, c := range cs {
		s := string(c.Kind) + " " + c.Name
		if c.From != "" {
			s += " from " + c.From
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// IndexChanges, the decision of what happens to a target's indexes, on
// each kind of catalog it can find.
func TestIndexChanges(t *testing.T) {
	def := indexFlow(t, "")
	declared := indexFlow(t, "    indexes:\n      - columns: [d]\n        using: brin\n      - columns: [k]\n")
	brin, k := declared.Indexes()[0], declared.Indexes()[1]
	dflt := def.Indexes()[0]
	if !dflt.Default || dflt.Name != IndexName("t", Index{Columns: []string{"d"}, Using: "btree", Default: true}) || !IsRWCIndex(dflt.Name) {
		t.Fatalf("default index %+v", dflt)
	}
	hand := CatalogIndex{Name: "t_d_idx", Columns: []string{"d"}, Valid: true, Using: "btree"}
	for _, c := range []struct {
		name string
		f    *Flow
		have []CatalogIndex
		want string
	}{
		{"nothing yet", def, nil, "added " + dflt.Name},
		{"up to date", def, def.AssumedCatalog(), ""},
		{"a hand-made index serves", def, []CatalogIndex{hand}, "left_alone t_d_idx"},
		{"invalid", def, []CatalogIndex{{Name: dflt.Name, Columns: []string{"d"}, Using: "btree"}}, "rebuilt " + dflt.Name},
		{"the default gives way to a brin index on its column; another added", declared, def.AssumedCatalog(),
			"changed " + brin.Name + " from " + dflt.Name + "; added " + k.Name},
		{"opt out", indexFlow(t, "    indexes: []\n"), append(def.AssumedCatalog(), hand), "dropped " + dflt.Name + "; left_alone t_d_idx"},
	} {
		if got := kinds(c.f.IndexChanges(c.have)); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, got, c.want)
		}
	}
	// A changed index is built before the old one is dropped.
	ch := declared.IndexChanges(def.AssumedCatalog())[0]
	if len(ch.SQL) != 2 || !strings.HasPrefix(ch.SQL[0], "CREATE INDEX CONCURRENTLY") || !strings.HasPrefix(ch.SQL[1], "DROP INDEX CONCURRENTLY") {
		t.Errorf("changed: %q", ch.SQL)
	}
}

// An index's name is deterministic, fits PostgreSQL's 63 bytes, and
// differs with any part of the definition.
func TestIndexName(t *testing.T) {
	long := strings.Repeat("c", 63)
	a := IndexName(long, Index{Columns: []string{long, long}, Using: "btree"})
	if len(a) != 63 || !IsRWCIndex(a) {
		t.Errorf("%q: %d bytes", a, len(a))
	}
	seen := map[string]bool{}
	for _, ix := range []Index{{Columns: []string{"d"}, Using: "btree"}, {Columns: []string{"d"}, Using: "brin"},
		{Columns: []string{"d"}, Using: "btree", Unique: true}, {Columns: []string{"d"}, Using: "btree", WhereSQL: "true"},
		{Columns: []string{"d"}, Using: "btree", Unique: true, Primary: true}, {Columns: []string{"d", "k"}, Using: "btree"}} {
		n := IndexName("t", ix)
		if seen[n] || n != IndexName("t", ix) {
			t.Errorf("%+v: name %s not unique or not stable", ix, n)
		}
		seen[n] = true
	}
	if IsRWCIndex("t_d_idx") || IsRWCIndex("t_d_rwc_1234567") {
		t.Error("a hand-made name read as rwc's")
	}
}

package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
)

// IndexMethods are the access methods an index may name in using:, the
// first being the default.
var IndexMethods = []string{"btree", "brin", "hash", "gin"}

// loadIndexes reads indexes: (the JSON Schema has checked its shape).
func loadIndexes(n *yaml.Node, src []string, file string) []Index {
	out := []Index{} // not nil: the key is there, even when empty
	for _, item := range n.Content {
		ix := Index{Key: Key{Pos: diag.Pos{File: file, Line: item.Line, Column: item.Column}}}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i], item.Content[i+1]
			switch k.Value {
			case "columns":
				ix.Key = loadKey(v, file)
				ix.Pos = diag.Pos{File: file, Line: item.Line, Column: item.Column}
			case "unique":
				ix.Unique = isTrue(v)
			case "using":
				ix.Using = v.Value
			case "where":
				ix.Where = newText(src, file, v)
			}
		}
		out = append(out, ix)
	}
	return out
}

// loadKey reads a list of column names.
func loadKey(n *yaml.Node, file string) Key {
	k := Key{Pos: diag.Pos{File: file, Line: n.Line, Column: n.Column}}
	for _, c := range n.Content {
		k.Columns = append(k.Columns, c.Value)
		k.ColumnPos = append(k.ColumnPos, diag.Pos{File: file, Line: c.Line, Column: c.Column})
	}
	return k
}

// checkKeys refuses an index or primary key naming a column the table does
// not declare, or one column twice: CREATE INDEX would fail at apply.
func checkKeys(t *Table) diag.List {
	var ds diag.List
	check := func(what string, k Key) {
		seen := map[string]bool{}
		for i, c := range k.Columns {
			switch {
			case t.Column(c) == nil:
				hint := what + " names the table's columns: " + columnNames(t)
				if best := diag.Closest(c, declared(t)); best != "" {
					hint = fmt.Sprintf("did you mean %q? ", best) + hint
				}
				ds.Errorf("RW122", k.ColumnPos[i], hint, "%s names %q, which is not a column of %s", what, c, t.Name)
			case seen[c]:
				ds.Errorf("RW122", k.ColumnPos[i], "name each column once", "%s names column %q twice", what, c)
			}
			seen[c] = true
		}
	}
	if t.PrimaryKey != nil {
		check("primary_key", *t.PrimaryKey)
	}
	for i, ix := range t.Indexes {
		check(fmt.Sprintf("index %d", i+1), ix.Key)
	}
	return ds
}

func declared(t *Table) []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

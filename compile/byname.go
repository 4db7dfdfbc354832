package compile

import (
	"fmt"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

// byName checks that the query's output columns are the declared columns,
// matched by name: rwc inserts BY NAME, so order does not matter but every
// name does.
func byName(t *spec.Table, a *query.Analysis) diag.List {
	var ds diag.List
	if a.Star != nil {
		ds.Errorf("RW306", t.Query.AtOffset(a.Star.Offset), "list the columns: SELECT "+columnNames(t)+" FROM ...",
			"SELECT * cannot be matched to the declared columns by name without reading the database; lint needs the column list")
		return ds
	}
	out := map[string]query.OutputColumn{}
	for _, c := range a.Columns {
		if !c.Named {
			ds.Errorf("RW307", t.Query.AtOffset(c.Offset), "name it: ... AS <column>",
				"output column %d has no name (PostgreSQL would call it %q)", indexOf(a.Columns, c)+1, c.Name)
			continue
		}
		if first, dup := out[c.Name]; dup {
			ds.Errorf("RW305", t.Query.AtOffset(c.Offset), fmt.Sprintf("alias one of them; the first is at %s", t.Query.AtOffset(first.Offset)),
				"the query outputs column %q twice", c.Name)
			continue
		}
		out[c.Name] = c
	}
	for _, c := range t.Columns {
		if _, ok := out[c.Name]; !ok {
			hint := "add it to the SELECT list (… AS " + c.Name + "), or remove it from columns:"
			if best := diag.Closest(c.Name, outputNames(a)); best != "" {
				hint = fmt.Sprintf("the query outputs %q: rename one of them; ", best) + hint
			}
			ds.Errorf("RW303", c.Pos, hint, "column %s is declared but the query does not output it", c.Name)
		}
	}
	for _, c := range a.Columns {
		if c.Named && t.Column(c.Name) == nil && out[c.Name].Offset == c.Offset {
			ds.Errorf("RW304", t.Query.AtOffset(c.Offset), "declare it under columns:, or drop it from the SELECT list",
				"the query outputs column %q, which is not declared in columns:", c.Name)
		}
	}
	return ds
}

func indexOf(cols []query.OutputColumn, c query.OutputColumn) int {
	for i := range cols {
		if cols[i].Offset == c.Offset {
			return i
		}
	}
	return 0
}

func outputNames(a *query.Analysis) []string {
	var s []string
	for _, c := range a.Columns {
		s = append(s, c.Name)
	}
	return s
}

func columnNames(t *spec.Table) string {
	s := ""
	for i, c := range t.Columns {
		if i > 0 {
			s += ", "
		}
		s += c.Name
	}
	return s
}

package spec

import (
	"fmt"
	"strings"

	"github.com/rwc-dev/rwc/diag"
)

// The checks here are PostgreSQL's own limits that the JSON Schema cannot
// express. Without them the server reports each one only at apply, against
// a position in rwc's generated SQL that the user never wrote.

// StateSchema is the schema rwc keeps its state in (run/state.go). A target
// there could collide with a state table, and a full refresh of it would
// run with rwc's own tables next door.
const StateSchema = "rwc"

// maxColumns is PostgreSQL's MaxHeapAttributeNumber: "tables can have at
// most 1600 columns".
const maxColumns = 1600

// systemColumns are the names every PostgreSQL table already has; CREATE
// TABLE refuses a column of the same name. (oid stopped being one in
// PostgreSQL 12 and is an ordinary name now.)
var systemColumns = map[string]bool{
	"tableoid": true, "xmin": true, "cmin": true, "xmax": true, "cmax": true, "ctid": true,
}

const schemaHint = "put the targets in a schema of their own, e.g. schema: analytics (the default is public)"

// checkSchema refuses the schemas rwc must not create tables in.
func checkSchema(name string, at diag.Pos) diag.List {
	var ds diag.List
	switch {
	case name == StateSchema:
		ds.Errorf("RW116", at, schemaHint, "schema %q is where rwc keeps its own state; targets cannot live there", name)
	case name == "information_schema":
		ds.Errorf("RW116", at, schemaHint, "schema %q holds PostgreSQL's catalog views; targets cannot live there", name)
	case strings.HasPrefix(name, "pg_"):
		ds.Errorf("RW116", at, schemaHint, "schema %q is reserved: PostgreSQL keeps the pg_ prefix for system schemas (pg_catalog, pg_temp, pg_toast, …)", name)
	}
	return ds
}

// checkColumns refuses column names and counts CREATE TABLE would.
func checkColumns(t *Table) diag.List {
	var ds diag.List
	for _, c := range t.Columns {
		if systemColumns[c.Name] {
			ds.Errorf("RW115", c.Pos, fmt.Sprintf("rename the column, e.g. %s_value, and alias it in the query (AS %s_value)", c.Name, c.Name),
				"column name %q is a PostgreSQL system column, which every table already has", c.Name)
		}
	}
	if len(t.Columns) > maxColumns {
		ds.Errorf("RW118", t.Columns[maxColumns].Pos, "split the table into flows of at most 1600 columns each",
			"table %s declares %d columns; PostgreSQL allows at most %d in a table, and %s is column %d", t.Name, len(t.Columns), maxColumns, t.Columns[maxColumns].Name, maxColumns+1)
	}
	return ds
}

// checkStorable refuses free text that a PostgreSQL text value cannot hold:
// a NUL character, which YAML lets a double-quoted scalar write as \0,
// \x00 or \u0000. (Names cannot hold one: the JSON Schema's identifier
// pattern refuses them; predicates and queries have their own checks.)
func checkStorable(what string, t Text) diag.List {
	var ds diag.List
	if i := strings.IndexByte(t.Value, 0); i >= 0 {
		ds.Errorf("RW117", t.AtOffset(i), "remove the \\0 (or \\x00, \\u0000) escape",
			"the %s contains a NUL character, which PostgreSQL text cannot hold", what)
	}
	return ds
}

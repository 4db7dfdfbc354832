package databricks

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// sparkType is one Spark SQL type and the PostgreSQL type a target column
// of it gets; export writes the first Spark name for a PostgreSQL type.
// docs/databricks.md has this table.
type sparkType struct {
	spark []string // Spark names, the one export writes first
	pg    string   // PostgreSQL base type (canonical, as pgtype names it)
	mods  bool     // carries (n) or (p,s)
}

var sparkTypes = []sparkType{
	{spark: []string{"BIGINT", "LONG"}, pg: "bigint"},
	{spark: []string{"INT", "INTEGER"}, pg: "integer"},
	{spark: []string{"SMALLINT", "SHORT", "TINYINT", "BYTE"}, pg: "smallint"},
	{spark: []string{"DECIMAL", "DEC", "NUMERIC"}, pg: "numeric", mods: true},
	{spark: []string{"DOUBLE"}, pg: "double precision"},
	{spark: []string{"FLOAT", "REAL"}, pg: "real"},
	{spark: []string{"STRING"}, pg: "text"},
	{spark: []string{"VARCHAR"}, pg: "character varying", mods: true},
	{spark: []string{"CHAR"}, pg: "character", mods: true},
	{spark: []string{"BOOLEAN"}, pg: "boolean"},
	{spark: []string{"DATE"}, pg: "date"},
	// Spark's TIMESTAMP is an instant shown in the session's zone:
	// PostgreSQL's timestamptz. TIMESTAMP_NTZ is a wall-clock time.
	{spark: []string{"TIMESTAMP", "TIMESTAMP_LTZ"}, pg: "timestamp with time zone"},
	{spark: []string{"TIMESTAMP_NTZ"}, pg: "timestamp without time zone"},
	{spark: []string{"BINARY"}, pg: "bytea"},
	{spark: []string{"INTERVAL"}, pg: "interval"},
}

var sparkTypeShape = regexp.MustCompile(`^([A-Za-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$`)

// pgTypeOf is the PostgreSQL type of a Spark column type, or an error that
// says why there is none.
func pgTypeOf(spark string) (pgtype.Type, error) {
	s := strings.Join(strings.Fields(spark), " ")
	m := sparkTypeShape.FindStringSubmatch(s)
	if m == nil {
		up := strings.ToUpper(s)
		if strings.HasPrefix(up, "ARRAY") || strings.HasPrefix(up, "MAP") || strings.HasPrefix(up, "STRUCT") || up == "VARIANT" {
			return pgtype.Type{}, fmt.Errorf("%s has no PostgreSQL column type rwc maps it to: declare the column jsonb (or an array type) and build the value in the query", s)
		}
		return pgtype.Type{}, fmt.Errorf("%q is not a Spark SQL type rwc knows", s)
	}
	name := strings.ToUpper(m[1])
	for _, t := range sparkTypes {
		for _, n := range t.spark {
			if n != name {
				continue
			}
			pg := t.pg
			switch {
			case t.mods && m[3] != "":
				pg += "(" + m[2] + "," + m[3] + ")"
			case t.mods && m[2] != "":
				pg += "(" + m[2] + ")"
			case t.pg == "numeric":
				pg = "numeric(10,0)" // Spark's DECIMAL without precision
			case m[2] != "":
				return pgtype.Type{}, fmt.Errorf("%s takes no (n)", name)
			}
			return pgtype.Parse(pg)
		}
	}
	return pgtype.Type{}, fmt.Errorf("%q is not a Spark SQL type rwc knows", s)
}

// sparkTypeOf is the Spark type export writes for a PostgreSQL column type.
func sparkTypeOf(t pgtype.Type) (string, bool) {
	if t.Array {
		return "", false
	}
	for _, st := range sparkTypes {
		if st.pg != t.Base {
			continue
		}
		name := st.spark[0]
		if st.mods {
			if i := strings.IndexByte(t.Canonical, '('); i >= 0 {
				name += strings.ReplaceAll(t.Canonical[i:], " ", "")
			} else if t.Base == "numeric" {
				// numeric without precision holds any number; Spark's
				// widest decimal is DECIMAL(38,18).
				return "DECIMAL(38,18)", false
			}
		}
		return name, true
	}
	return "", false
}

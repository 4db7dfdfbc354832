package spec

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
)

// Expectation kinds: what one entry of expect: checks.
const (
	ExpectCheck         = "check"
	ExpectNotNull       = "not_null"
	ExpectUnique        = "unique"
	ExpectRows          = "rows"
	ExpectRelationships = "relationships"
)

// ExpectKinds are the kinds, in the order docs and messages list them.
var ExpectKinds = []string{ExpectCheck, ExpectNotNull, ExpectUnique, ExpectRows, ExpectRelationships}

// Expectation is one named entry of a table's expect:, checked on the rows
// a refresh wrote, inside its transaction, before it commits.
type Expectation struct {
	Name string
	Pos  diag.Pos // of the name
	Kind string   // one of ExpectKinds ("" when the entry names none, or several)
	// Warn: severity: warn (the refresh commits and records the failure);
	// otherwise a failure rolls the refresh back.
	Warn        bool
	Check       Text // check:, CEL over the table's columns
	Columns     Key  // not_null:, unique:
	AcrossTable bool // unique: also against the target's other rows
	Rows        *RowBounds
	Rel         *Relationship
}

// Severity is the expectation's severity as it is written.
func (e *Expectation) Severity() string {
	if e.Warn {
		return "warn"
	}
	return "error"
}

// RowBounds is rows:. Min and Max bound the rows the refresh wrote;
// MaxChange (a fraction, 0: none) bounds each partition's change against
// what it held before the refresh.
type RowBounds struct {
	Min, Max  *int64
	MaxChange float64
	// MaxChangeText is max_change as written ("50%").
	MaxChangeText string
	Pos           diag.Pos
}

// Relationship is relationships:: Column's values must exist in
// ToSchema.ToTable.ToColumn.
type Relationship struct {
	Column            string
	ColumnPos         diag.Pos
	ToSchema, ToTable string
	ToColumn          string
	To                string // as written
	ToPos             diag.Pos
}

// ExpectationKeys are an expectation's keys; RowsKeys and RelationshipKeys
// those of rows: and relationships:.
var (
	ExpectationKeys  = []string{"check", "not_null", "unique", "across_table", "rows", "relationships", "severity"}
	RowsKeys         = []string{"min", "max", "max_change"}
	RelationshipKeys = []string{"column", "to"}
)

// loadExpectations reads expect: (the JSON Schema has checked its shape),
// in the order written.
func loadExpectations(n *yaml.Node, src []string, file string) ([]*Expectation, diag.List) {
	var out []*Expectation
	var ds diag.List
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		e := &Expectation{Name: k.Value, Pos: at(k)}
		var kinds []string
		for j := 0; j+1 < len(v.Content); j += 2 {
			key, val := v.Content[j], v.Content[j+1]
			switch key.Value {
			case "check":
				e.Check = newText(src, file, val)
			case "not_null", "unique":
				e.Columns = loadKey(val, file)
			case "across_table":
				e.AcrossTable = isTrue(val)
			case "rows":
				e.Rows = loadRows(val, file, &ds)
			case "relationships":
				e.Rel = loadRelationship(val, file, &ds)
			case "severity":
				e.Warn = val.Value == "warn"
			}
			for _, kind := range ExpectKinds {
				if key.Value == kind {
					kinds = append(kinds, kind)
				}
			}
		}
		switch len(kinds) {
		case 1:
			e.Kind = kinds[0]
		case 0:
			ds.Errorf("RW129", e.Pos, "give it one of "+strings.Join(ExpectKinds, ", "), "expectation %s says nothing to check", e.Name)
		default:
			ds.Errorf("RW129", e.Pos, "split it into one expectation per kind, each with its own name",
				"expectation %s has %d kinds (%s); an expectation checks one thing", e.Name, len(kinds), strings.Join(kinds, ", "))
		}
		if e.AcrossTable && e.Kind != ExpectUnique {
			ds.Errorf("RW129", e.Pos, "remove across_table:, or make the expectation unique: [columns]", "expectation %s: across_table applies to unique: only", e.Name)
		}
		out = append(out, e)
	}
	return out, ds
}

func loadRows(n *yaml.Node, file string, ds *diag.List) *RowBounds {
	r := &RowBounds{Pos: diag.Pos{File: file, Line: n.Line, Column: n.Column}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := diag.Pos{File: file, Line: v.Line, Column: v.Column}
		switch k.Value {
		case "min", "max":
			x, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil || x < 0 {
				ds.Errorf("RW131", at, "write a whole number of rows, e.g. "+k.Value+": 1", "rows.%s %q is not a number of rows", k.Value, v.Value)
				continue
			}
			if k.Value == "min" {
				r.Min = &x
			} else {
				r.Max = &x
			}
		case "max_change":
			r.MaxChangeText = v.Value
			f, err := parsePercent(v.Value)
			if err != nil {
				ds.Errorf("RW131", at, "write a percentage above 0, e.g. max_change: 50%", "rows.max_change %q: %v", v.Value, err)
				continue
			}
			r.MaxChange = f
		}
	}
	switch {
	case r.Min == nil && r.Max == nil && r.MaxChangeText == "":
		ds.Errorf("RW131", r.Pos, "give min:, max: or max_change:, e.g. rows: {min: 1}", "rows: bounds nothing")
	case r.Min != nil && r.Max != nil && *r.Min > *r.Max:
		ds.Errorf("RW131", r.Pos, "swap them, or raise max:", "rows.min (%d) is above rows.max (%d): every refresh would fail", *r.Min, *r.Max)
	}
	return r
}

// decimal is a percentage's number as people write it: strconv.ParseFloat
// alone also takes "inf" (a bound that never fails), "NaN" and hex floats.
var decimal = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$`)

// parsePercent reads "50%" (or "12.5%") as 0.5 (0.125).
func parsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("not a percentage (it ends in %%)")
	}
	num = strings.TrimSpace(num)
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !decimal.MatchString(num) || f <= 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a percentage above 0")
	}
	return f / 100, nil
}

func loadRelationship(n *yaml.Node, file string, ds *diag.List) *Relationship {
	r := &Relationship{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := diag.Pos{File: file, Line: v.Line, Column: v.Column}
		switch k.Value {
		case "column":
			r.Column, r.ColumnPos = v.Value, at
		case "to":
			r.To, r.ToPos = v.Value, at
			parts := strings.Split(v.Value, ".")
			switch {
			case len(parts) == 2 && identifier(parts[0]) && identifier(parts[1]):
				r.ToSchema, r.ToTable, r.ToColumn = "public", parts[0], parts[1]
			case len(parts) == 3 && identifier(parts[0]) && identifier(parts[1]) && identifier(parts[2]):
				r.ToSchema, r.ToTable, r.ToColumn = parts[0], parts[1], parts[2]
			default:
				ds.Errorf("RW132", at, "write schema.table.column (or table.column, in public), e.g. to: analytics.products.product_id",
					"relationships.to %q does not name a column", v.Value)
			}
		}
	}
	return r
}

// identifier: a lower-case name as the JSON Schema's identifier pattern
// allows (rwc quotes every name it renders).
func identifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// checkExpectColumns refuses an expectation naming a column the table
// does not declare, or one column twice.
func checkExpectColumns(t *Table, e *Expectation) diag.List {
	var ds diag.List
	unknown := func(c string, at diag.Pos, what string) {
		hint := what + " names the table's columns: " + columnNames(t)
		if best := diag.Closest(c, declared(t)); best != "" {
			hint = fmt.Sprintf("did you mean %q? ", best) + hint
		}
		ds.Errorf("RW130", at, hint, "expectation %s: %s names %q, which is not a column of %s", e.Name, what, c, t.Name)
	}
	seen := map[string]bool{}
	for i, c := range e.Columns.Columns {
		switch {
		case t.Column(c) == nil:
			unknown(c, e.Columns.ColumnPos[i], e.Kind)
		case seen[c]:
			ds.Errorf("RW130", e.Columns.ColumnPos[i], "name each column once", "expectation %s names column %q twice", e.Name, c)
		case e.Kind == ExpectUnique && noEquality(t.Column(c)):
			ds.Errorf("RW130", e.Columns.ColumnPos[i], "store the column as jsonb (or text), which compare; or leave it out of unique:",
				"expectation %s: column %s is %s, which PostgreSQL cannot compare for equality", e.Name, c, t.Column(c).Type.Canonical)
		}
		seen[c] = true
	}
	if e.Rel != nil && e.Rel.Column != "" {
		switch c := t.Column(e.Rel.Column); {
		case c == nil:
			unknown(e.Rel.Column, e.Rel.ColumnPos, "relationships.column")
		case noEquality(c):
			ds.Errorf("RW130", e.Rel.ColumnPos, "relate a column that compares (jsonb, text, a number, a key)",
				"expectation %s: column %s is %s, which PostgreSQL cannot compare for equality", e.Name, c.Name, c.Type.Canonical)
		}
	}
	return ds
}

// checkSelfRelationships refuses a relationship of a column to itself: the
// rows a refresh wrote are in the table by then, so it could never fail
// (to another column of the same table, parent_id to id, is a check).
func checkSelfRelationships(t *Table) diag.List {
	var ds diag.List
	for _, e := range t.Expect {
		if r := e.Rel; r != nil && r.ToColumn == r.Column && r.ToTable == t.Name && r.ToSchema == t.Pipeline.Schema {
			ds.Errorf("RW132", r.ToPos, "name the column of another table the values must exist in, e.g. to: analytics.products.product_id",
				"expectation %s: relationships.to %q is the column itself: the rows written are in the table, so it always passes", e.Name, r.To)
		}
	}
	return ds
}

// Definition is what the expectation checks, in one line, the same
// whatever the YAML's layout: what a plan shows and compares.
func (e *Expectation) Definition() string {
	s := e.Kind + ": "
	switch e.Kind {
	case ExpectCheck:
		s += OneLine(e.Check.Value)
	case ExpectNotNull, ExpectUnique:
		s += "[" + strings.Join(e.Columns.Columns, ", ") + "]"
		if e.AcrossTable {
			s += " across_table"
		}
	case ExpectRows:
		var parts []string
		if e.Rows.Min != nil {
			parts = append(parts, fmt.Sprintf("min %d", *e.Rows.Min))
		}
		if e.Rows.Max != nil {
			parts = append(parts, fmt.Sprintf("max %d", *e.Rows.Max))
		}
		if e.Rows.MaxChangeText != "" {
			parts = append(parts, "max_change "+e.Rows.MaxChangeText)
		}
		s += strings.Join(parts, ", ")
	case ExpectRelationships:
		s += e.Rel.Column + " in " + e.Rel.ToSchema + "." + e.Rel.ToTable + "." + e.Rel.ToColumn
	default:
		s = "nothing"
	}
	return s + " (" + e.Severity() + ")"
}

// noEquality: PostgreSQL has no equality for the column's type (json, xml),
// so unique: cannot group by it nor relationships: look it up.
func noEquality(c *Column) bool {
	return !c.Type.Array && (c.Type.Base == "json" || c.Type.Base == "xml")
}

// OneLine is CEL text with its runs of white space outside string literals
// made one space: the same check however laid out, and a check whose
// literal changed (even in its spaces) another.
func OneLine(cel string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(cel); {
		c := cel[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = true
			i++
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		n := 1
		if c == '\'' || c == '"' {
			raw := i > 0 && (cel[i-1] == 'r' || cel[i-1] == 'R')
			n = literalLen(cel[i:], raw)
		}
		b.WriteString(cel[i : i+n])
		i += n
	}
	return b.String()
}

// literalLen is the length of the string literal s starts with (all of s
// when it does not end).
func literalLen(s string, raw bool) int {
	q := s[:1]
	if len(s) >= 3 && s[1:3] == q+q {
		q = s[:3]
	}
	for i := len(q); i < len(s); i++ {
		switch {
		case s[i] == '\\' && !raw:
			i++
		case strings.HasPrefix(s[i:], q):
			return i + len(q)
		}
	}
	return len(s)
}

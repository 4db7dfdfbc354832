package compile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// WindowTexts are the window's columns of the text family: those whose
// collation matters (windowCollations).
func (f *Flow) WindowTexts() []string {
	var out []string
	for _, name := range f.Predicate.Columns {
		if c := f.Table.Column(name); c != nil && c.Type.Family == pgtype.Text {
			out = append(out, name)
		}
	}
	return out
}

// JoinedColumn is a source column that a window column's predicate is
// pushed onto through a join's equality (dim.k in SELECT ev.k … JOIN dim
// ON dim.k = ev.k), not the column the query yields. The join compares
// the two as whichever type and collation PostgreSQL resolves the
// equality to, which need not be what the window is read as
// (JoinMismatch).
type JoinedColumn struct {
	Column string // the window's
	// Table is the source, quoted as the query resolves it; Source its
	// column, unquoted.
	Table, Source string
	// Types are the base types (as format_type names them) the source
	// column may have for the window's predicate, its values and their
	// text to mean on it what they mean on the window's column: exactly
	// those of its family that compare, and print, alike.
	Types []string
}

// JoinedColumns lists, for each of the window's columns, the source
// columns other than its own that its predicate would be pushed onto.
func (f *Flow) JoinedColumns() []JoinedColumn {
	var out []JoinedColumn
	for _, col := range f.Predicate.Columns {
		c := f.Table.Column(col)
		l := f.Query.Lineage(col)
		if c == nil || !l.Found || l.FromStar {
			continue // nothing is pushed onto a column the query may not yield
		}
		for _, x := range l.Exposed {
			if l.Source != nil && x.Table.Offset == l.Source.Table.Offset && x.Column == l.Source.Column {
				continue
			}
			name := pq.QuoteIdentifier(x.Table.Name)
			if x.Table.Schema != "" {
				name = pq.QuoteIdentifier(x.Table.Schema) + "." + name
			}
			j := JoinedColumn{Column: col, Table: name, Source: x.Column, Types: exactTypes(c.Type)}
			if !slices.ContainsFunc(out, func(o JoinedColumn) bool { return o.Column == j.Column && o.Table == j.Table && o.Source == j.Source }) {
				out = append(out, j) // a self-join names it twice
			}
		}
	}
	return out
}

// exactTypes are the types a joined column of a window column of type t
// may have (JoinedColumn.Types).
func exactTypes(t pgtype.Type) []string {
	switch t.Family {
	case pgtype.Int:
		return []string{"smallint", "integer", "bigint"}
	case pgtype.Text:
		return []string{"text", "character varying"}
	}
	return []string{t.Base}
}

// JoinMismatch is a JoinedColumn whose type is not among its Types, or
// that is stored under a nondeterministic collation, which the join's
// equality then compares under ('a' joins 'A'). Pushed onto it, the
// window would mean something else: a range compared byte by byte
// (COLLATE "C") leaves out dim's 'A' rows that the window's 'a' rows
// join; a bigint window's values compared as double precision join rows
// the window, pushed as double precision, drops; a citext column groups
// 'B' with 'b'. And a change to one of its rows would be mapped onto the
// wrong partition. So the window is applied after the query only, as for
// a TypeMismatch.
type JoinMismatch struct {
	Column, Source string
	// Type is the source column's, when not one of the window's;
	// Collation its nondeterministic collation, when it has one.
	Type, Collation string
}

// Mismatched is the JoinMismatch that j, the source column being of type
// typ under collation coll, is (ok false: none).
func (j JoinedColumn) Mismatched(typ, coll string, nondeterministic bool) (JoinMismatch, bool) {
	m := JoinMismatch{Column: j.Column, Source: j.Table + "." + pq.QuoteIdentifier(j.Source)}
	if !slices.Contains(j.Types, typ) {
		m.Type = typ
	}
	if nondeterministic {
		m.Collation = coll
	}
	return m, m.Type != "" || m.Collation != ""
}

func (m JoinMismatch) String() string {
	var why, fix []string
	if m.Type != "" {
		why = append(why, fmt.Sprintf("of type %s, which does not compare or print as the window's column does", m.Type))
		fix = append(fix, "join a column of the window column's own type (or cast it in the join: rwc then pushes the window onto the other side only)")
	}
	if m.Collation != "" {
		why = append(why, fmt.Sprintf("under the nondeterministic collation %s, which the join compares under ('a' joins 'A')", m.Collation))
		fix = append(fix, fmt.Sprintf("if the join need not ignore such differences, compare under a deterministic one (%s COLLATE \"default\" = …)", m.Source))
	}
	return fmt.Sprintf("the query joins the window's column %s to %s, %s: the window is applied after the query only, so each refresh recomputes it whole; %s, and rwc pushes the window into the sources again",
		m.Column, m.Source, strings.Join(why, " and "), strings.Join(fix, "; "))
}

// AfterQueryOnly: the window cannot be pushed into the sources (the
// predicate would mean something else there), nor what changed be read
// from their rows.
func (o Observation) AfterQueryOnly() bool {
	return len(o.Mismatches) > 0 || len(o.JoinMismatches) > 0
}

// AfterQueryNotes say why the window is applied after the query only.
func (o Observation) AfterQueryNotes() []string {
	var out []string
	for _, m := range o.Mismatches {
		out = append(out, m.String())
	}
	for _, m := range o.JoinMismatches {
		out = append(out, m.String())
	}
	return out
}

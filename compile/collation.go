package compile

import (
	"fmt"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// WindowTexts are the window's columns of the text family: those whose
// collation matters (windowCollations, Flow.JoinedTexts).
func (f *Flow) WindowTexts() []string {
	var out []string
	for _, name := range f.Predicate.Columns {
		if c := f.Table.Column(name); c != nil && c.Type.Family == pgtype.Text {
			out = append(out, name)
		}
	}
	return out
}

// JoinedText is a source column that a window text column's predicate
// is pushed onto through a join's equality (ev.k in SELECT d.k … JOIN ev
// ON ev.k = d.k), not the column the query yields. The join compares the
// two under whichever collation wins (a column's own over the database's
// default), which need not be the one the window is read under
// (CollationMismatch).
type JoinedText struct {
	Column string // the window's
	// Table is the source, quoted as the query resolves it; Source its
	// column, unquoted.
	Table, Source string
}

// JoinedTexts lists, for each of the window's text columns, the source
// columns other than its own that its predicate would be pushed onto.
func (f *Flow) JoinedTexts() []JoinedText {
	var out []JoinedText
	for _, col := range f.WindowTexts() {
		l := f.Query.Lineage(col)
		if !l.Found || l.FromStar {
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
			out = append(out, JoinedText{Column: col, Table: name, Source: x.Column})
		}
	}
	return out
}

// CollationMismatch is a JoinedText stored under a nondeterministic
// collation, which the join's equality then compares under: the query
// joins the window's 'a' rows to the source's 'A'. Pushed onto the
// source, a range (compared byte by byte, COLLATE "C") would leave out
// its 'A' rows that the window's 'a' rows join, and a change to one would
// be mapped onto partition 'A', not 'a': so the window is applied after
// the query only, as for a TypeMismatch. A deterministic collation's
// equality is byte for byte, whichever it is.
type CollationMismatch struct {
	Column, Source, Collation string
}

func (m CollationMismatch) String() string {
	return fmt.Sprintf("the query joins the window's column %s to %s, which compares under %[2]s's nondeterministic collation %[3]s ('a' joins 'A'): the window is applied after the query only, so each refresh recomputes it whole; if the join need not ignore such differences, compare under a deterministic one (%[2]s COLLATE \"default\" = …) and rwc pushes the window into the sources again",
		m.Column, m.Source, m.Collation)
}

// AfterQueryOnly: the window cannot be pushed into the sources (the
// predicate would mean something else there), nor what changed be read
// from their rows.
func (o Observation) AfterQueryOnly() bool {
	return len(o.Mismatches) > 0 || len(o.JoinCollations) > 0
}

// AfterQueryNotes say why the window is applied after the query only.
func (o Observation) AfterQueryNotes() []string {
	var out []string
	for _, m := range o.Mismatches {
		out = append(out, m.String())
	}
	for _, m := range o.JoinCollations {
		out = append(out, m.String())
	}
	return out
}

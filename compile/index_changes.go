package compile

import (
	"fmt"
	"slices"
	"strings"
)

// CatalogIndex is an index the target has, as the catalog (pg_index)
// describes it: what IndexChanges compares f's indexes with.
type CatalogIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"` // an expression column is ""
	Unique  bool     `json:"unique,omitempty"`
	Primary bool     `json:"primary,omitempty"`
	// Valid is false for an index whose CREATE INDEX CONCURRENTLY failed
	// or was cancelled: it is not used for reads, yet still written.
	Valid   bool   `json:"valid"`
	Using   string `json:"using"`
	Partial bool   `json:"partial,omitempty"`
}

// IndexChangeKind is what becomes of one index.
type IndexChangeKind string

const (
	IndexAdded   IndexChangeKind = "added"
	IndexDropped IndexChangeKind = "dropped"
	// IndexChanged: an index rwc created gives way to its new definition
	// on the same columns, built before the old one is dropped.
	IndexChanged IndexChangeKind = "changed"
	// IndexRebuilt: an invalid index rwc created (a build that failed or
	// was cancelled) is dropped and built again.
	IndexRebuilt IndexChangeKind = "rebuilt"
	// IndexLeftAlone: an index rwc did not create, which it never drops.
	IndexLeftAlone IndexChangeKind = "left_alone"
)

// IndexChange is one index's change, and the statements that make it, in
// order: each runs on its own, outside any transaction (CREATE INDEX
// CONCURRENTLY and DROP INDEX CONCURRENTLY cannot run in one). None
// touches a row.
type IndexChange struct {
	Kind    IndexChangeKind `json:"kind"`
	Name    string          `json:"name"`
	From    string          `json:"from,omitempty"` // changed: the index it replaces
	Columns []string        `json:"columns"`
	Unique  bool            `json:"unique,omitempty"`
	Primary bool            `json:"primary_key,omitempty"`
	Using   string          `json:"using,omitempty"`
	Where   string          `json:"where,omitempty"`
	Default bool            `json:"default,omitempty"`
	Note    string          `json:"note,omitempty"`
	SQL     []string        `json:"sql"`
}

// String is the change as the plan's text shows it.
func (c IndexChange) String() string {
	s := fmt.Sprintf("index %s %s (%s)", strings.ReplaceAll(string(c.Kind), "_", " "), c.Name, strings.Join(c.Columns, ", "))
	switch {
	case c.Primary:
		s += " primary key"
	case c.Unique:
		s += " unique"
	}
	if c.Using != "" && c.Using != "btree" {
		s += " using " + c.Using
	}
	if c.Where != "" {
		s += " where " + c.Where
	}
	if c.From != "" {
		s += ", replacing " + c.From
	}
	if c.Note != "" {
		s += ": " + c.Note
	}
	return s
}

// defaultNote says why rwc adds an index the spec does not declare.
const defaultNote = "the default index on the partition column, which every refresh's DELETE and probes filter on (declare indexes: to choose others, indexes: [] for none)"

// IndexChanges compares the indexes f's target should have with those
// it has (the catalog's, or, planned without a database, those the
// deployed spec gave it): what to build, rebuild, replace and drop, and
// which indexes of the user's rwc leaves alone. An index rwc created is
// known by its name (IsRWCIndex); one of the same name is the same
// definition (IndexName hashes it).
func (f *Flow) IndexChanges(have []CatalogIndex) []IndexChange {
	byName := map[string]CatalogIndex{}
	for _, h := range have {
		byName[h.Name] = h
	}
	var rebuilt, added, dropped, alone []IndexChange
	wanted := map[string]bool{}
	for _, ix := range f.indexes {
		wanted[ix.Name] = true
		h, ok := byName[ix.Name]
		switch {
		case ok && h.Valid:
		case ok:
			c := f.addChange(IndexRebuilt, ix)
			c.Note = "its last build failed or was cancelled, leaving it invalid"
			c.SQL = append([]string{f.dropSQL(h)}, c.SQL...)
			rebuilt = append(rebuilt, c)
		case ix.Default && servedBy(have, ix) != "":
			alone = append(alone, IndexChange{Kind: IndexLeftAlone, Name: servedBy(have, ix), Columns: ix.Columns, SQL: []string{},
				Note: "not created by rwc; it serves the window, so rwc adds no default index on " + ix.Columns[0]})
			wanted[servedBy(have, ix)] = true
		default:
			added = append(added, f.addChange(IndexAdded, ix))
		}
	}
	for _, h := range have {
		switch {
		case wanted[h.Name]:
		case IsRWCIndex(h.Name):
			dropped = append(dropped, IndexChange{Kind: IndexDropped, Name: h.Name, Columns: h.Columns, Unique: h.Unique, Primary: h.Primary,
				Using: h.Using, SQL: []string{f.dropSQL(h)}})
		default:
			note := "not created by rwc: left alone"
			if !h.Valid {
				note += " (it is INVALID: its build failed; drop it or REINDEX it yourself)"
			}
			alone = append(alone, IndexChange{Kind: IndexLeftAlone, Name: h.Name, Columns: h.Columns, Unique: h.Unique, Primary: h.Primary,
				Using: h.Using, Note: note, SQL: []string{}})
		}
	}
	added, dropped = pairChanged(added, dropped)
	return slices.Concat(rebuilt, added, dropped, alone)
}

// addChange builds ix on the existing target.
func (f *Flow) addChange(kind IndexChangeKind, ix Index) IndexChange {
	c := IndexChange{Kind: kind, Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique, Primary: ix.Primary, Using: ix.Using,
		Where: ix.Where, Default: ix.Default, SQL: []string{f.CreateSQL(ix, true)}}
	if ix.Primary {
		c.SQL = append(c.SQL, f.attachSQL(ix))
	}
	if ix.Default {
		c.Note = defaultNote
	}
	return c
}

// pairChanged turns an index added and one dropped on the same columns
// (both primary keys, or neither) into one change: the new one is built,
// then the old one dropped, so the target is never without either. Two
// primary keys cannot coexist: the old key is dropped in the statement
// that attaches the new one.
func pairChanged(added, dropped []IndexChange) (changed, rest []IndexChange) {
	used := make([]bool, len(dropped))
	for _, a := range added {
		for j, d := range dropped {
			if used[j] || a.Primary != d.Primary || (!a.Primary && !slices.Equal(a.Columns, d.Columns)) {
				continue
			}
			used[j] = true
			a.Kind, a.From = IndexChanged, d.Name
			if a.Primary {
				last := len(a.SQL) - 1
				a.SQL[last] = d.SQL[0] + "; " + a.SQL[last]
			} else {
				a.SQL = append(a.SQL, d.SQL...)
			}
			break
		}
		changed = append(changed, a)
	}
	for j, d := range dropped {
		if !used[j] {
			rest = append(rest, d)
		}
	}
	return changed, rest
}

// servedBy is a valid index rwc did not create that leads with the
// default index's column, as a btree without a predicate: one made by
// hand before rwc made its own (CREATE INDEX ON t (d)). "" when none.
func servedBy(have []CatalogIndex, ix Index) string {
	for _, h := range have {
		if !IsRWCIndex(h.Name) && h.Valid && !h.Partial && h.Using == "btree" && len(h.Columns) > 0 && h.Columns[0] == ix.Columns[0] {
			return h.Name
		}
	}
	return ""
}

// AssumedCatalog is the indexes f's spec gives its target, as the
// catalog would list them once rwc built them: what a plan without a
// database assumes the deployed target has.
func (f *Flow) AssumedCatalog() []CatalogIndex {
	out := []CatalogIndex{}
	for _, ix := range f.indexes {
		out = append(out, CatalogIndex{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique, Primary: ix.Primary, Valid: true,
			Using: ix.Using, Partial: ix.Where != ""})
	}
	return out
}

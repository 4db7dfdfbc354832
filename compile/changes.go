package compile

import (
	"fmt"
	"strings"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// ChangeKind is what changed in a flow's definition between the deployed
// specs and the work tree (diff.Classify says which).
type ChangeKind int

const (
	ChangeNew ChangeKind = iota
	ChangeRemoved
	ChangeQuery
	ChangeProperties
	ChangePredicateWidened
	ChangePredicateNarrowed
	ChangePredicateRewritten
	ChangePredicateNotComparable
	ChangeColumnAdded
	ChangeColumnDropped
	ChangeColumnRetyped
	// The index kinds name the index (Change.Column): rwc builds and drops
	// indexes without touching a row, so none is destructive.
	ChangeIndexAdded
	ChangeIndexDropped
	ChangeIndexChanged
	// The expectation kinds name the expectation (Change.Column): an
	// expectation reads rows, it never changes one.
	ChangeExpectationAdded
	ChangeExpectationRemoved
	ChangeExpectationChanged
	// ChangeMaintain: maintain: switched between apply and immediate; rwc
	// installs or drops the sources' triggers, and no row changes for it.
	ChangeMaintain
)

// changeWords are the plan's words for each kind, its JSON included; a
// column change adds ":" and the column.
var changeWords = [...]string{"new", "removed", "query_changed", "properties_changed",
	"predicate_widened", "predicate_narrowed", "predicate_rewritten", "predicate_not_comparable",
	"column_added", "column_dropped", "column_retyped", "index_added", "index_dropped", "index_changed",
	"expectation_added", "expectation_removed", "expectation_changed", "maintain_changed"}

// Change is one change to a flow's definition.
type Change struct {
	Kind   ChangeKind
	Column string // for the column kinds: the column; for the index kinds: the index
}

func (c Change) String() string {
	if c.Column != "" {
		return changeWords[c.Kind] + ":" + c.Column
	}
	return changeWords[c.Kind]
}

// MarshalText writes the plan's word for c.
func (c Change) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a saved plan's word back.
func (c *Change) UnmarshalText(b []byte) error {
	word, col, _ := strings.Cut(string(b), ":")
	for k, w := range changeWords {
		if w == word {
			*c = Change{Kind: ChangeKind(k), Column: col}
			return nil
		}
	}
	return fmt.Errorf("unknown change %q", b)
}

// Changes are a flow's changes, in the order they are shown.
type Changes []Change

// Has reports whether any change is of kind k.
func (cs Changes) Has(k ChangeKind) bool {
	for _, c := range cs {
		if c.Kind == k {
			return true
		}
	}
	return false
}

// Words are the plan's words for cs.
func (cs Changes) Words() []string {
	words := make([]string, len(cs))
	for i, c := range cs {
		words[i] = c.String()
	}
	return words
}

func (cs Changes) String() string { return strings.Join(cs.Words(), ", ") }

// Definition is what changed in one flow's definition, as diff.Classify
// finds it.
type Definition struct {
	Changes Changes
	// Window is the partition column's ranges the window gains and loses
	// (nil: not a range on it).
	Window *predicate.Change
}

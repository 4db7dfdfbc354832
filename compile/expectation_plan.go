package compile

import (
	"github.com/rwc-dev/rwc/diag"
)

// PlanExpectation is one of a flow's expectations as a plan lists it.
type PlanExpectation struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	diag.Pos
	Definition string `json:"definition"`
	// Change: "added" or "changed" against the deployed definition (""
	// unchanged, or nothing deployed); Was the deployed definition.
	Change string `json:"change,omitempty"`
	Was    string `json:"was,omitempty"`
}

// planExpectations lists f's expectations against old's (nil: nothing
// deployed to compare with).
func planExpectations(f, old *Flow) []PlanExpectation {
	var out []PlanExpectation
	for _, e := range f.Expectations {
		pe := PlanExpectation{Name: e.Name, Kind: e.Kind, Severity: e.Severity(), Pos: e.Pos, Definition: e.Definition()}
		if old != nil {
			switch was := old.expectation(e.Name); {
			case was == nil:
				pe.Change = "added"
			case was.Definition() != pe.Definition:
				pe.Change, pe.Was = "changed", was.Definition()
			}
		}
		out = append(out, pe)
	}
	return out
}

func (f *Flow) expectation(name string) *Expectation {
	for _, e := range f.Expectations {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// ExpectationChanges are the changes to f's expectations since old: none
// is destructive, and none makes a refresh recompute anything.
func (f *Flow) ExpectationChanges(old *Flow) Changes {
	var cs Changes
	for _, pe := range planExpectations(f, old) {
		switch pe.Change {
		case "added":
			cs = append(cs, Change{Kind: ChangeExpectationAdded, Column: pe.Name})
		case "changed":
			cs = append(cs, Change{Kind: ChangeExpectationChanged, Column: pe.Name})
		}
	}
	for _, e := range old.Expectations {
		if f.expectation(e.Name) == nil {
			cs = append(cs, Change{Kind: ChangeExpectationRemoved, Column: e.Name})
		}
	}
	return cs
}

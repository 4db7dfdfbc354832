package compile

import (
	"github.com/rwc-dev/rwc/spec/predicate"
)

// RefreshInput is what a refresh's decision depends on, all of it known
// before the refresh writes: the flow's state, its own window, what was
// asked, and what rwc observed of the database. rwc apply observes in the
// refresh's transaction; rwc plan, with a database, the same read-only.
type RefreshInput struct {
	State FlowState
	// Window is the flow's own window, resolved.
	Window *predicate.Predicate
	// Override: a one-off predicate (a backfill, --where) instead of the
	// window; Full: every row deleted, the window recomputed.
	Override, Full bool
	Observed       Observation
}

// DecideRefresh is the one decision of what a refresh does before it
// writes: its action and reasons, its column changes, and whether its
// changes can be read from the sources' rows (Capture). What the capture
// then finds only narrows an incremental refresh or makes it recompute the
// whole window; the refresh records why.
func (f *Flow) DecideRefresh(in RefreshInput) Decision {
	obs := in.Observed
	dec := f.Decide(in.State, in.Window, obs)
	var why string
	dec.Capture, why = f.capturable(in.Window, obs)
	if !dec.Capture && dec.Action == ActionIncremental {
		dec.Action, dec.Reasons, dec.NotIncremental = ActionRecomputeWindow, []Reason{ReasonCannotPushPredicate}, why
	}
	switch {
	case in.Full:
		dec.Action, dec.Reasons, dec.NotIncremental = ActionFullRefresh, []Reason{ReasonFullRefreshRequested}, ""
	case in.Override:
		dec.Action, dec.Reasons, dec.NotIncremental = ActionBackfill, []Reason{ReasonBackfill}, ""
		dec.Window = in.Window
	case obs.TargetMissing:
		// Dropped outside rwc, or a new schema: whatever the state says,
		// this is a first refresh.
		dec.Action, dec.Reasons, dec.Columns = ActionCreate, []Reason{ReasonFirstRefresh}, nil
	}
	return dec
}

// capturable says whether f's changes can be read from its sources' rows
// in window, and when its shape allows it but the database or the window
// does not, why not.
func (f *Flow) capturable(window *predicate.Predicate, obs Observation) (bool, string) {
	switch {
	case !f.Incremental() || obs.AfterQueryOnly():
		return false, "" // Decide says so (CANNOT_PUSH_PREDICATE)
	case obs.Blocker != "":
		return false, obs.Blocker
	case HoldsNull(window):
		return false, "the window holds rows whose " + f.PartitionBy + " is NULL"
	}
	return true, ""
}

// HoldsNull reports whether a window holds rows whose partition value is
// NULL (a predicate TRUE for NULL, as `... || true` is), or cannot tell:
// such a window cannot be narrowed to the values that changed (NULL is no
// value to list) nor fingerprinted per value (a probe prints it as the
// empty string).
func HoldsNull(window *predicate.Predicate) bool {
	in, err := window.Eval(map[string]predicate.Value{}, predicate.Resolution{})
	return err != nil || in
}

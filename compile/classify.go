package compile

import (
	"encoding/json"
	"fmt"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Reason is why a refresh is not incremental (design §1), or what it ran
// instead; its value is the word plans, results and the event log use.
type Reason string

// Reason codes of design §1.
const (
	ReasonFirstRefresh   Reason = "FIRST_REFRESH"
	ReasonQueryChanged   Reason = "QUERY_CHANGED"
	ReasonExternalChange Reason = "EXTERNAL_CHANGE_IN_REPLACE_WINDOW"
	// ReasonNotDeterministic is retired: replace_where refuses rand()
	// (RW211) since a refresh's DELETE and INSERT would draw differently.
	// Event logs of earlier refreshes may hold it.
	ReasonNotDeterministic      Reason = "REPLACE_WHERE_NOT_DETERMINISTIC"
	ReasonPriorNotDeterministic Reason = "PRIOR_REPLACE_WHERE_NOT_DETERMINISTIC"
	ReasonPriorPredicateMissing Reason = "PRIOR_REPLACE_WHERE_PREDICATE_MISSING"
	ReasonStaleTargetData       Reason = "STALE_TARGET_DATA_IN_WINDOW"
	ReasonCannotPushPredicate   Reason = "CANNOT_PUSH_PREDICATE"
	ReasonBackfill              Reason = "REPLACE_WHERE_BACKFILL"
	ReasonFullRefreshRequested  Reason = "FULL_REFRESH_REQUESTED"
)

// Action is what a plan or a refresh does to a flow; its value is the
// word plans, results and the event log use.
type Action string

// Actions a plan or a refresh takes for a flow.
const (
	ActionCreate          Action = "create"
	ActionIncremental     Action = "incremental"
	ActionRecomputeWindow Action = "recompute_window"
	ActionFullRefresh     Action = "full_refresh"
	ActionBackfill        Action = "backfill"
	ActionNone            Action = "none"
	// ActionSkipped: rwc apply did not refresh the flow, because a flow
	// whose target it reads failed.
	ActionSkipped Action = "skipped"
	// ActionFailed: the event of a refresh that failed before it decided.
	ActionFailed Action = "failed"
	// ActionRefused: a plan's flow whose refresh rwc apply refuses before
	// it changes anything (FlowPlan.Refused says why).
	ActionRefused Action = "refused"
)

// StoredColumn is a target column as the state recorded it.
type StoredColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// FlowState is what rwc's state knows of a flow: the target as created or
// last evolved, and the last window refresh.
type FlowState struct {
	Found bool
	// TargetOID is the table id rwc.flows records for the target;
	// TargetGone: no table has it any more.
	TargetOID        uint32
	TargetGone       bool
	Columns          []StoredColumn
	QueryFingerprint string
	// PredicateCEL is the resolved window of the last refresh ("" if none
	// could be stored); EnvVersion the language it was written in.
	PredicateCEL  string
	EnvVersion    int
	Determinism   string
	LastRefreshed bool
	// DeployedProtected: the last deployment's definition of the flow has
	// reset_allowed: false (the spec on disk may say otherwise).
	DeployedProtected bool
	// DeployedUnreadable: the last deployment's specs no longer load, so
	// every flow counts as deployed protected (DeployedProtected).
	DeployedUnreadable bool
}

// Protected reports whether f's target is guarded (reset_allowed: false):
// a guard is read from the spec and from the deployed definition, and the
// stricter wins, so that an edit not deployed (not even committed) cannot
// relax it. A guarded target refuses a full refresh, and a refresh whose
// DELETE removes rows its INSERT cannot give back (Statements.CountLost)
// unless that loss is allowed explicitly.
func (f *Flow) Protected(st FlowState) bool {
	return !f.Table.ResetAllowed || st.DeployedProtected
}

// GuardSource says where a protected flow's guard comes from, for messages.
func (f *Flow) GuardSource(st FlowState) string {
	if f.Table.ResetAllowed && st.DeployedUnreadable {
		return fmt.Sprintf("as deployed: the last deployment's specs no longer load, so every flow counts as reset_allowed: false, though %s says reset_allowed: true, until rwc apply deploys specs that load", f.Table.Pos)
	}
	if f.Table.ResetAllowed && st.DeployedProtected {
		return fmt.Sprintf("in the deployed definition, though %s now says reset_allowed: true; a guard is relaxed by deploying that change (rwc apply) first", f.Table.Pos)
	}
	return f.Table.Pos.String()
}

// Columns returns the flow's declared columns in the stored form.
func (f *Flow) Columns() []StoredColumn {
	out := make([]StoredColumn, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		out[i] = StoredColumn{c.Name, c.Type.Canonical}
	}
	return out
}

// ColumnsJSON is Columns as the state stores it.
func (f *Flow) ColumnsJSON() string {
	b, _ := json.Marshal(f.Columns())
	return string(b)
}

// ColumnChange is one difference between the stored and declared columns.
type ColumnChange struct {
	Kind   string // "added", "dropped", "retyped"
	Column string
	From   string
	To     string
}

// Change renders it as a plan's change entry: column_added:uniq_users.
func (c ColumnChange) Change() string { return c.AsChange().String() }

// AsChange is the plan's change for it.
func (c ColumnChange) AsChange() Change {
	kind := map[string]ChangeKind{"added": ChangeColumnAdded, "dropped": ChangeColumnDropped, "retyped": ChangeColumnRetyped}[c.Kind]
	return Change{Kind: kind, Column: c.Column}
}

// Destructive reports whether applying it can lose data: a dropped column,
// or a retyped one unless the new type holds every value of the old
// (pgtype.Widens: integer → bigint, varchar(n) → text, ...).
func (c ColumnChange) Destructive() bool {
	switch c.Kind {
	case "added":
		return false
	case "retyped":
		return !pgtype.Widens(c.From, c.To)
	}
	return true
}

// ColumnChanges compares the stored columns with the declared ones.
func (f *Flow) ColumnChanges(stored []StoredColumn) []ColumnChange {
	var out []ColumnChange
	have := map[string]string{}
	for _, c := range stored {
		have[c.Name] = c.Type
	}
	want := map[string]bool{}
	for _, c := range f.Columns() {
		want[c.Name] = true
		old, ok := have[c.Name]
		switch {
		case !ok:
			out = append(out, ColumnChange{Kind: "added", Column: c.Name, To: c.Type})
		case old != c.Type:
			out = append(out, ColumnChange{Kind: "retyped", Column: c.Name, From: old, To: c.Type})
		}
	}
	for _, c := range stored {
		if !want[c.Name] {
			out = append(out, ColumnChange{Kind: "dropped", Column: c.Name, From: c.Type})
		}
	}
	return out
}

// AlterSQL is the DDL that evolves the target for a column change.
func (f *Flow) AlterSQL(c ColumnChange) string {
	col := pq.QuoteIdentifier(c.Column)
	switch c.Kind {
	case "added":
		return fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", f.Target(), col, c.To)
	case "dropped":
		return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", f.Target(), col)
	}
	return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s", f.Target(), col, c.To, col, c.To)
}

// Decision is what a refresh of a flow does and why.
type Decision struct {
	Action  Action
	Reasons []Reason
	Columns []ColumnChange
	// Capture: the refresh fingerprints the sources and the target, its
	// changes being readable from the sources' rows (DecideRefresh).
	Capture bool
	// NotIncremental: why a refresh Decide found incremental is not, when
	// the database or the window rules it out (for the log).
	NotIncremental string
	// What the capture decided (DecideCapture), for an incremental
	// refresh: the partitions it recomputes and the window narrowed to
	// them (nil: the whole window), or that nothing changed (Unchanged: no
	// statement runs); and what of the target it still waits for (Await).
	Partitions []string
	Narrowed   *predicate.Predicate
	Unchanged  bool
	Await      Await
	// Window is the flow's own window, resolved, for an override (a
	// backfill): on a partitioned target it swaps in only the whole
	// partitions of its range that lie outside the window, whose rows the
	// fingerprints it stores do not describe.
	Window *predicate.Predicate
}

// Decide classifies an ordinary refresh of f given its state and the window
// it will use now (resolved). Plans and the runner both call it, so a plan
// predicts exactly what apply records.
func (f *Flow) Decide(st FlowState, window *predicate.Predicate, obs Observation) Decision {
	d := Decision{Reasons: []Reason{}}
	add := func(r Reason) { d.Reasons = append(d.Reasons, r) }
	if !st.Found || !st.LastRefreshed {
		d.Action = ActionCreate
		add(ReasonFirstRefresh)
		if st.Found {
			d.Columns = f.ColumnChanges(st.Columns)
		}
		return d
	}
	d.Action = ActionRecomputeWindow
	d.Columns = f.ColumnChanges(st.Columns)
	fp := f.Fingerprint()
	if st.QueryFingerprint != fp || len(d.Columns) > 0 {
		add(ReasonQueryChanged)
	}
	if st.Determinism == predicate.NonDeterministic.String() {
		add(ReasonPriorNotDeterministic)
	}
	prior, ok := f.StoredWindow(st)
	switch {
	case !ok:
		add(ReasonPriorPredicateMissing)
	case !predicate.Contains(prior, window):
		add(ReasonStaleTargetData)
	}
	if !f.Incremental() || obs.AfterQueryOnly() {
		add(ReasonCannotPushPredicate)
	}
	if len(d.Reasons) == 0 {
		// What changed is only known at refresh time (fingerprints); the
		// refresh may still fall back, and then records why.
		d.Action = ActionIncremental
	}
	return d
}

// StoredWindow compiles the last refresh's resolved window back; false when
// the state has none or it no longer compiles.
func (f *Flow) StoredWindow(st FlowState) (*predicate.Predicate, bool) {
	if st.PredicateCEL == "" {
		return nil, false
	}
	p, issues := predicate.Compile(st.PredicateCEL, predicateColumns(f.Table))
	if len(issues) > 0 {
		return nil, false
	}
	return p, true
}

// Fingerprint identifies the flow's query ignoring layout and comments.
func (f *Flow) Fingerprint() string {
	f.fingerprintOnce.Do(func() {
		if f.Query != nil {
			f.fingerprint = f.Query.Fingerprint
		} else if fp, err := query.Fingerprint(f.Table.Query.Value); err == nil {
			f.fingerprint = fp
		}
	})
	return f.fingerprint
}

// Words are the words of typed values (reasons, actions), for views.
func Words[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

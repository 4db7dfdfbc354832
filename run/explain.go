package run

import (
	"context"
	"database/sql"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Explained is what a refresh would do now, decided as the refresh decides
// (compile.Flow.DecideRefresh, then DecideCapture), from what the database
// shows: read-only, locking nothing.
type Explained struct {
	Decision compile.Decision
	// Writes: what it writes, in order (see compile.Flow.Writes; after a
	// narrowed write, the whole window when the target turns out changed:
	// compile.Flow.CaptureWrites).
	Writes   []compile.Statements
	Window   string // its predicate, as CEL
	Observed compile.Observation
	// Assumed: there was no database; the decision is a first refresh's,
	// the statements the whole window's (see compile.NoDatabaseAssumption).
	Assumed bool
	// Indexes: what becomes of the target's indexes first, before the
	// refresh and outside its transaction (Runner.syncIndexes).
	Indexes []compile.IndexChange
	// Notes: what could not be observed, and what was assumed instead, as
	// rwc plan notes it.
	Notes []string
	// Checks: the flow's expectations, checked on what the last write
	// writes (compile.Flow.Checks).
	Checks compile.Checks
	// Refused: why the refresh refuses the table under the target's name
	// (compile.Flow.TargetVerdict), changing nothing; it then writes
	// nothing (no Writes).
	Refused string
}

// Explain decides req as a refresh would, now; db nil: without a database.
func Explain(ctx context.Context, db *sql.DB, req Request, opts Options) (Explained, error) {
	f := req.Flow
	res := predicate.Resolution{Now: time.Now(), Zone: opts.Zone}
	if opts.Now != nil {
		res.Now = opts.Now()
	}
	pred := f.Predicate
	if req.Mode == Override {
		pred = req.Where
	}
	resolved, err := pred.Resolve(res)
	if err != nil {
		return Explained{}, err
	}
	window, err := f.Predicate.Resolve(res)
	if err != nil {
		return Explained{}, err
	}
	ex := Explained{Assumed: db == nil}
	in := compile.RefreshInput{Window: window, Override: req.Mode == Override, Full: req.Mode == Full}
	if db != nil {
		if err := ex.observe(ctx, db, f, &in, opts.StatementTimeout); err != nil {
			return ex, err
		}
	}
	in.Observed.Today = res.Today()
	ex.Observed = in.Observed
	if db != nil && ex.refused(f, in) {
		ex.Window = resolved.Root.CEL()
		return ex, nil
	}
	switch {
	case in.Observed.IndexesRead && f.Partitioned():
		ex.Indexes = f.PartitionedIndexChanges(in.Observed.Indexes, in.Observed.Partitions)
	case in.Observed.IndexesRead:
		ex.Indexes = f.IndexChanges(in.Observed.Indexes)
	}
	ex.Decision = f.DecideRefresh(in)
	if !ex.Assumed && ex.Decision.Action == compile.ActionIncremental {
		found, err := FindChanges(ctx, db, f, window, opts.StatementTimeout)
		if err == nil {
			ex.Decision, ex.Writes, err = f.CaptureWrites(ex.Decision, window, resolved, found, in.Observed)
			ex.Window = resolved.Root.CEL()
			if err != nil {
				return ex, err
			}
			ex.Checks, err = f.Checks(ex.Writes[len(ex.Writes)-1], res)
			if err != nil {
				return ex, err
			}
			// The counts before the first write, as the refresh makes them.
			first, err := f.Checks(ex.Writes[0], res)
			ex.Checks.Before = first.Before
			return ex, err
		}
		ex.Notes = append(ex.Notes, "could not compare the fingerprints ("+err.Error()+"): the statements are the whole window's, which the refresh narrows to the partitions whose source rows changed")
	}
	s, err := f.Writes(ex.Decision, resolved, req.Mode == Full, in.Observed)
	if err != nil {
		return ex, err
	}
	ex.Writes = []compile.Statements{s}
	ex.Window = resolved.Root.CEL()
	ex.Checks, err = f.Checks(s, res)
	return ex, err
}

// refused notes the refresh's refusal of the target's table, if it refuses
// it (compile.Flow.TargetVerdict).
func (ex *Explained) refused(f *compile.Flow, in compile.RefreshInput) bool {
	var changes []compile.ColumnChange
	if in.State.Found {
		changes = f.ColumnChanges(in.State.Columns)
	}
	a := f.TargetVerdict(in.State, in.Observed, changes)
	ex.Refused = a.Refusal
	if a.Refusal != "" {
		ex.Decision.Action = compile.ActionRefused
	}
	return a.Refusal != ""
}

// observe fills in what the decision observes of the database: the flow's
// state (none before rwc's first apply) and the observation, which, when
// the query cannot be described yet (it reads a target no apply has made
// yet, say), is assumed as rwc plan assumes it.
func (ex *Explained) observe(ctx context.Context, db *sql.DB, f *compile.Flow, in *compile.RefreshInput, timeout time.Duration) error {
	var err error
	if in.Observed, err = Observe(ctx, db, f, timeout); err != nil {
		if isLockTimeout(err) {
			return err
		}
		in.Observed = compile.Observation{}
		ex.Notes = append(ex.Notes, "could not check the query's output types against the target's ("+err.Error()+"): explained as if they agree")
	}
	exists, err := StateExists(ctx, db)
	if err != nil || !exists {
		return err
	}
	st, err := loadFlowState(ctx, db, f.Name())
	in.State = st
	return err
}

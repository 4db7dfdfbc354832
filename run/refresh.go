package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec/predicate"
)

const (
	eventKindPlanningInformation = "planning_information"
	eventKindRefreshFailed       = "refresh_failed"
	advisoryNamespace            = "rwc.flow:"
)

// DefaultLockTimeout bounds every lock wait when no other bound is given
// (Options.LockTimeout, rwc's --lock-timeout).
const DefaultLockTimeout = 30 * time.Second

// Mode is what a refresh recomputes.
type Mode int

const (
	Window   Mode = iota // the flow's own predicate
	Override             // a one-off predicate (backfill)
	Full                 // delete every row, then the flow's own predicate
)

// Options configure a Runner.
type Options struct {
	// Zone is where current_date() is read; nil means UTC.
	Zone *time.Location
	// Now is the refresh time; nil means time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for a flow's lock and for table locks;
	// StatementTimeout bounds each statement. Zero: 30s and none.
	LockTimeout, StatementTimeout time.Duration
	// Log receives one line per notable step (may be nil).
	Log io.Writer
	// AllowDestructive lets a refresh drop or retype target columns.
	AllowDestructive bool
	// AllowLoss lets every refresh of a protected flow (reset_allowed:
	// false) delete rows its recompute cannot give back (--allow-loss);
	// Request.AllowLoss lets one.
	AllowLoss bool
}

// Runner refreshes flows on one database.
type Runner struct {
	db     *sql.DB
	opts   Options
	guards deployedGuards
}

// New returns a Runner; call Migrate once before refreshing.
func New(db *sql.DB, opts Options) *Runner {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Runner{db: db, opts: opts}
}

// Request is one refresh to run.
type Request struct {
	Flow *compile.Flow
	Mode Mode
	// Where is the override predicate (Mode Override), compiled against the
	// flow's columns and not yet resolved.
	Where *predicate.Predicate
	// Record, when set, runs in the refresh's transaction just before it
	// commits: a backfill's ledger commits with its batch or not at all.
	Record func(ctx context.Context, tx *sql.Tx, res *Result) error
	// Backfill names the backfill file an override runs for, and why: the
	// event log keeps both with the refresh.
	Backfill *BackfillNote
	// AllowLoss lets an override of a protected flow (reset_allowed: false)
	// delete rows its recompute cannot give back; without it such an
	// override is refused, saying how many.
	AllowLoss bool
}

// BackfillNote is what the event log keeps of the backfill file a refresh
// ran for.
type BackfillNote struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
	Batch  int    `json:"batch"`
	Of     int    `json:"of"`
}

// Outcome is what one refresh did, as a Result says it and as the event
// log keeps it (Event).
type Outcome struct {
	Flow         string           `json:"flow"`
	Action       compile.Action   `json:"action"`
	Reasons      []compile.Reason `json:"reasons"`
	PredicateCEL string           `json:"predicate_cel"`
	PredicateSQL string           `json:"predicate_sql"`
	RowsDeleted  int64            `json:"rows_deleted"`
	RowsInserted int64            `json:"rows_inserted"`
	StartedAt    time.Time        `json:"started_at"`
	// Backfill: the backfill file the refresh ran for (nil: none).
	Backfill *BackfillNote `json:"backfill,omitempty"`
}

// Result is what one refresh did; it is also the event log's record.
type Result struct {
	Outcome
	RowsOutside int64 `json:"rows_outside_window_lost,omitempty"`
	// RowsLost: the rows an override of a protected flow deleted and could
	// not give back (allowed explicitly; counted on protected flows only).
	RowsLost int64 `json:"rows_lost,omitempty"`
	// Columns are the target's columns the refresh filled.
	Columns []string `json:"columns"`
	// Partitions are the partition values an incremental refresh
	// recomputed (empty for a whole-window refresh).
	Partitions []string      `json:"partitions,omitempty"`
	Duration   time.Duration `json:"-"`
	Err        error         `json:"-"`
	// deadAgain: rows the refresh inserted and deleted again (an
	// incremental write the whole window's recompute replaced): dead rows
	// that neither count shows.
	deadAgain int64
}

// flowState is a flow's row in rwc.flows.
type flowState struct {
	compile.FlowState
	targetOID uint32
}

// Refresh runs one refresh in one transaction under the flow's advisory
// lock: a failure or a kill at any point leaves the target and the state as
// they were. Column changes are the exception: they commit just before, on
// their own, so that readers of the target never wait for the recompute
// (see evolveAlone).
func (r *Runner) Refresh(ctx context.Context, req Request) Result {
	f := req.Flow
	// StartedAt is the wall clock; the window is resolved at opts.Now, which
	// a saved plan pins to the instant it was planned at.
	var res Result
	var err error
	for attempt := 1; ; attempt++ {
		res = Result{Outcome: Outcome{Flow: f.Name(), StartedAt: time.Now().UTC(), Reasons: []compile.Reason{}, Backfill: req.Backfill}}
		start := time.Now()
		err = r.refresh(ctx, req, &res)
		res.Duration = time.Since(start)
		// Someone changed a target row the refresh was about to replace,
		// after the refresh's snapshot: the refresh rolled back whole, and
		// a new one sees the change (and recomputes around it).
		if !isSerializationFailure(err) || attempt == maxAttempts || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(r.opts.Log, "%s: a concurrent change to %s: %v; refreshing again (attempt %d of %d)\n",
			f.Name(), f.Target(), err, attempt+1, maxAttempts)
	}
	if err != nil {
		err = stoppedBy(ctx, "the refresh of flow "+f.Name(), err)
		after := unchanged
		var ac *afterColumns
		if errors.As(err, &ac) {
			after = ac.rolledBack()
		}
		err = lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, after, err)
		res.Err = err
		var refused *Refusal
		if !errors.As(err, &refused) {
			r.recordFailure(ctx, &res)
		}
	}
	return res
}

// Refusal is a refresh rwc declined to start (a user's request it will not
// carry out); nothing was attempted, so nothing is logged as a failure.
type Refusal struct{ msg string }

func (r *Refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &Refusal{fmt.Sprintf(format, args...)} }

// fullRefusal refuses a full refresh of a protected flow.
func fullRefusal(f *compile.Flow, st compile.FlowState) error {
	return refuse("flow %s has reset_allowed: false (%s): a full refresh would delete every row outside the window, so rwc refuses it and nothing was changed; use rwc refresh %s --where to recompute a range",
		f.Name(), f.GuardSource(st), f.Name())
}

func (r *Runner) refresh(ctx context.Context, req Request, res *Result) error {
	f := req.Flow
	// rand() in the window is RW211: its DELETE and INSERT would draw
	// differently. Checked here too, for a flow that did not pass lint.
	if f.Predicate == nil || f.Query == nil || (req.Mode != Override && f.Predicate.Determinism == predicate.NonDeterministic) {
		return refuse("flow %s has lint errors; run rwc lint", f.Name())
	}
	if req.Mode == Full && !f.Table.ResetAllowed {
		return fullRefusal(f, compile.FlowState{})
	}
	pred := f.Predicate
	if req.Mode == Override {
		pred = req.Where
	}
	resolved, err := pred.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone})
	if err != nil {
		return err
	}
	conn, unlock, err := r.lockFlow(ctx, f)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.syncIndexes(ctx, conn, f); err != nil {
		return err
	}
	start := *res
	err = r.refreshLocked(ctx, conn, req, res, resolved)
	var first *columnsFirst
	if !errors.As(err, &first) {
		return err
	}
	// The target's columns change first, in a transaction of their own
	// (see evolveAlone); then the refresh runs again from the start, in a
	// new snapshot, and finds nothing left to change in them.
	changes, err := r.evolveAlone(ctx, conn, f)
	if err != nil {
		return err
	}
	*res = start
	if err := r.syncIndexes(ctx, conn, f); err != nil {
		return &afterColumns{err: err, changes: changes}
	}
	if err := r.refreshLocked(ctx, conn, req, res, resolved); err != nil {
		return &afterColumns{err: err, changes: changes}
	}
	return nil
}

// refreshLocked is one refresh under the flow's lock, on its connection,
// in one transaction. It returns a *columnsFirst, having changed nothing,
// when the target's columns must change first.
func (r *Runner) refreshLocked(ctx context.Context, conn *sql.Conn, req Request, res *Result, resolved *predicate.Predicate) error {
	f := req.Flow
	// A refresh that fingerprints probes the target, and sometimes its
	// sources, on connections of their own.
	var spare *spareConns
	if f.Incremental() && req.Mode != Override {
		spare = r.spares(ctx)
		defer spare.release()
	}
	// One snapshot for the whole refresh, taken after the lock: the
	// fingerprints that decide what to recompute and the rows recomputed
	// are the same data.
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// DateStyle ISO: partition values are read back as text and must parse.
	// The parser's settings: a statement of an earlier refresh on this
	// session may have changed them, and rwc's own SQL is read with them too.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL DateStyle = ISO; SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d; %s",
		r.opts.LockTimeout.Milliseconds(), r.opts.StatementTimeout.Milliseconds(), session.Reassert)); err != nil {
		return err
	}
	obs, oid, err := observe(ctx, tx, f)
	if err != nil {
		return queryError(f, err)
	}
	for _, m := range obs.Mismatches {
		fmt.Fprintf(r.opts.Log, "%s: %s\n", f.Name(), m)
	}
	stmts, err := f.Statements(resolved, req.Mode == Full, obs)
	if err != nil {
		return err
	}
	res.PredicateCEL, res.PredicateSQL = stmts.PredicateCEL, stmts.PredicateSQL
	st, err := loadFlowState(ctx, tx, f.Name())
	if err != nil {
		return err
	}
	// The guard: the spec's, or the deployed definition's (read under the
	// flow's lock, in the refresh's snapshot). A window refresh deletes only
	// what its window mirrors, unless the window grew onto history.
	if req.Mode != Window || f.Widens(st.FlowState, resolved) {
		guards, err := protectedFlows(ctx, tx, &r.guards)
		if err != nil {
			return err
		}
		guards.apply(&st.FlowState, f.Name())
	}
	protected := f.Protected(st.FlowState)
	if req.Mode == Full && protected {
		return fullRefusal(f, st.FlowState)
	}
	// The flow's own window, resolved now: fingerprints always describe it.
	window := resolved
	if req.Mode == Override {
		if window, err = f.Predicate.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone}); err != nil {
			return err
		}
	}
	dec := f.DecideRefresh(compile.RefreshInput{State: st.FlowState, Window: window,
		Override: req.Mode == Override, Full: req.Mode == Full, Observed: obs})
	if dec.NotIncremental != "" {
		fmt.Fprintf(r.opts.Log, "%s: not incremental: %s\n", f.Name(), dec.NotIncremental)
	}
	fingerprinted := dec.Capture
	res.Action, res.Reasons = dec.Action, dec.Reasons // a refusal below says what was refused
	if err := adoptable(f, st, oid); err != nil {
		return err
	}
	// Before anything is written or altered (column changes commit on
	// their own), and before the capture probes anything.
	if res.RowsLost, err = r.guardLoss(ctx, tx, req, st.FlowState, stmts, resolved, obs); err != nil {
		return err
	}
	if err := r.ensureTarget(ctx, tx, f, stmts, dec.Columns, oid); err != nil {
		return err
	}
	fingerprint := f.Fingerprint()
	columns := f.ColumnsJSON()
	for _, c := range f.Table.Columns {
		res.Columns = append(res.Columns, c.Name)
	}
	c := &capture{}
	if fingerprinted {
		if c, err = r.startCapture(ctx, tx, f, req, dec, st, window, spare); err != nil {
			return err
		}
		defer c.stop()
	}
	stored, forced := c.stored, c.forced
	// Every probe that runs aside has its connection by now: one not taken
	// goes back to the pool rather than idle through the write.
	spare.release()
	// An override's writes are rwc's, so afterwards the target's fingerprint
	// is stored again, lest the next refresh take them for external DML;
	// partitions that DML changed since the last refresh, and that the
	// override did not recompute, stay marked as changed, so that the DML
	// still shows then (wherever it is in the window then). Both over the
	// window the state records (the last refresh's), which is what the next
	// refresh compares within: the spec's window now may be narrower
	// (changed since, or moved on).
	storeTarget, fpWindow := true, window
	var dirtyBefore []string
	if fingerprinted && req.Mode == Override {
		if storeTarget, fpWindow, dirtyBefore, err = overrideBaseline(ctx, tx, f, st.FlowState); err != nil {
			return err
		}
	}
	// What the target's fingerprints were before the write, and where the
	// write may change them (nil: the whole window).
	var targetBefore []fingerprintRow
	var written *predicate.Predicate
	// The write does not wait for the target's probe when the sources
	// decide what it recomputes: reasonLater, the whole window is
	// recomputed whatever the probe finds, which only decides the reason
	// recorded (external DML is the one to report); checkLater, the
	// partitions whose sources changed are, and should the probe find DML
	// by anyone else in the window, the whole window is recomputed on top.
	reasonLater, checkLater := false, false
	whole := stmts // the whole window's statements
	if dec.Action == compile.ActionIncremental && forced != "" {
		dec.Action, dec.Reasons = compile.ActionRecomputeWindow, []compile.Reason{forced}
		reasonLater = stored.taken
	}
	if dec.Action == compile.ActionIncremental {
		narrowed, values, reason := changedPartitions(f, window, c.sources, stored)
		switch {
		case reason != "":
			dec.Action, dec.Reasons = compile.ActionRecomputeWindow, []compile.Reason{reason}
			reasonLater = true
		case narrowed == nil:
			// No source changed: only the target can say whether there is
			// anything to write.
			target, err := c.target.result()
			if err != nil {
				return err
			}
			if !targetClean(f, window, target, stored) {
				dec.Action, dec.Reasons = compile.ActionRecomputeWindow, []compile.Reason{compile.ReasonExternalChange}
				break
			}
			stmts = compile.Statements{} // nothing changed: nothing to recompute
			targetBefore = inWindowOnly(target)
		default:
			if stmts, err = f.Statements(narrowed, false, obs); err != nil {
				return err
			}
			res.Partitions, written, checkLater = values, narrowed, true
		}
	}
	res.Action, res.Reasons = dec.Action, dec.Reasons

	if req.Mode == Full {
		// What it loses for good, in its snapshot; its DELETE (of every
		// row, never a TRUNCATE: see compile.Statements) counts the rest.
		if err := tx.QueryRowContext(ctx, stmts.CountOutside).Scan(&res.RowsOutside); err != nil {
			return err
		}
		fmt.Fprintf(r.opts.Log, "%s: full refresh deletes %d rows outside the window for good\n", f.Name(), res.RowsOutside)
	}
	// The write locks the target: the target's probe must hold its own lock
	// on it first (see aside).
	c.target.waitLocks()
	var counts map[string]int64 // rows inserted per partition, by an incremental write
	if written != nil {
		counts = map[string]int64{}
	}
	if res.RowsDeleted, res.RowsInserted, err = write(ctx, tx, f, stmts, res.RowsDeleted, counts); err != nil {
		return err
	}
	if reasonLater || checkLater {
		target, err := c.target.result()
		if err != nil {
			return err
		}
		clean := targetClean(f, window, target, stored)
		switch {
		case !clean && checkLater:
			// DML by someone else changed the window since the last
			// refresh: the partitions just written are not enough. The
			// whole window is recomputed on top, in this transaction, so
			// the result is a whole-window recompute's; the rows inserted
			// a moment ago are deleted again (and counted as dead once).
			fmt.Fprintf(r.opts.Log, "%s: the target changed outside rwc within the window: recomputing all of it\n", f.Name())
			deleted, inserted, err := write(ctx, tx, f, whole, 0, nil)
			if err != nil {
				return err
			}
			res.deadAgain = res.RowsInserted
			res.RowsDeleted += deleted - res.RowsInserted
			res.RowsInserted = inserted
			res.Action, res.Partitions, written = compile.ActionRecomputeWindow, nil, nil
			res.Reasons = []compile.Reason{compile.ReasonExternalChange}
		case !clean:
			res.Reasons = []compile.Reason{compile.ReasonExternalChange}
		case checkLater:
			targetBefore = inWindowOnly(target)
		}
	}
	windowRows := res.RowsInserted
	if fingerprinted && storeTarget {
		sources, err := c.allSources(ctx, tx)
		if err != nil {
			return queryError(f, err)
		}
		var target []fingerprintRow
		switch {
		case req.Mode == Override:
			// Its range is not the window's: fingerprint the window again,
			// but for the partitions changed by DML that it left alone.
			if target, err = probeTarget(ctx, tx, f, fpWindow, prints{}, nil); err == nil {
				target = keepDirt(f, resolved, target, dirtyBefore)
			}
		case stmts.Insert == "":
			target = targetBefore // nothing changed, nothing written
		default:
			target, err = targetAfter(ctx, tx, f, written, res.Partitions, targetBefore, res.RowsInserted, counts)
		}
		if err != nil {
			return err
		}
		if err := storeFingerprints(ctx, tx, f, fpWindow, sources, target, req.Mode == Override); err != nil {
			return err
		}
		windowRows = 0
		for _, t := range target {
			windowRows += max(t.n, 0) // a rewrite's mark counts the rows inserted
		}
	}
	if req.Mode != Override {
		// An override does not change the flow: its window, and the window
		// the next refresh compares with, stay the flow's own.
		if _, err := tx.ExecContext(ctx, `UPDATE rwc.flows SET columns = $2, query_fingerprint = $3, predicate_cel = $4,
			predicate_sql = $5, env_version = $6, determinism = $7, last_refresh_at = $8 WHERE flow = $1`,
			f.Name(), columns, fingerprint, window.Root.CEL(), res.PredicateSQL, resolved.Version,
			f.Predicate.Determinism.String(), res.StartedAt); err != nil {
			return err
		}
	}
	churn, err := trackChurn(ctx, tx, f, res, windowRows)
	if err != nil {
		return err
	}
	if err := insertEvent(ctx, tx, eventKindPlanningInformation, res, time.Since(res.StartedAt), ""); err != nil {
		return err
	}
	if req.Record != nil {
		if err := req.Record(ctx, tx, res); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.vacuum(ctx, conn, f, res, churn)
	return nil
}

func loadFlowState(ctx context.Context, q queryer, flow string) (flowState, error) {
	var st flowState
	var columns string
	var cel, det sql.NullString
	var env sql.NullInt64
	var last sql.NullTime
	err := q.QueryRowContext(ctx, `SELECT target_oid, columns, query_fingerprint, predicate_cel, env_version, determinism, last_refresh_at
		FROM rwc.flows WHERE flow = $1`+forUpdate(q), flow).
		Scan(&st.targetOID, &columns, &st.QueryFingerprint, &cel, &env, &det, &last)
	switch {
	case err == sql.ErrNoRows:
		return st, nil
	case err != nil:
		return st, err
	}
	st.Found = true
	if err := json.Unmarshal([]byte(columns), &st.Columns); err != nil {
		return st, fmt.Errorf("state of flow %s: columns: %v", flow, err)
	}
	st.PredicateCEL, st.EnvVersion, st.Determinism, st.LastRefreshed = cel.String, int(env.Int64), det.String, last.Valid
	return st, nil
}

type queryer interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// adoptable refuses a target rwc did not create (oid: the table now, 0
// when there is none): adopting it would let a refresh delete rows nobody
// asked rwc to manage.
func adoptable(f *compile.Flow, st flowState, oid uint32) error {
	switch {
	case oid != 0 && !st.Found:
		return refuse("table %s already exists and was not created by rwc (%s): rwc refuses to adopt it; drop or rename it, or choose another table name (if rwc created it and lost the flow's row in rwc.flows, rwc state check says so, and rwc state repair re-adopts it)",
			f.Target(), f.Table.Pos)
	case oid != 0 && oid != st.targetOID:
		return refuse("table %s was dropped and created again outside rwc (%s): rwc refuses to adopt the new table; drop it and rwc will create and fill it",
			f.Target(), f.Table.Pos)
	}
	return nil
}

// ensureTarget creates the target on first use (oid 0), or asks for its
// column changes to commit first (columnsFirst).
func (r *Runner) ensureTarget(ctx context.Context, tx *sql.Tx, f *compile.Flow, s compile.Statements, changes []compile.ColumnChange, oid uint32) error {
	switch {
	case oid != 0 && len(changes) > 0:
		if err := r.refuseDestructive(f, changes); err != nil {
			return err
		}
		return &columnsFirst{}
	case oid != 0:
		return nil
	}
	if err := createSchema(ctx, tx, s.CreateSchema); err != nil {
		return err
	}
	for _, stmt := range append([]string{s.CreateTable}, s.CreateIndexes...) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO rwc.flows (flow, pipeline, target_schema, target_table, target_oid, columns, query_fingerprint)
		VALUES ($1, $2, $3, $4, to_regclass($5)::oid, $6, '')
		ON CONFLICT (flow) DO UPDATE SET pipeline = EXCLUDED.pipeline, target_schema = EXCLUDED.target_schema,
			target_table = EXCLUDED.target_table, target_oid = EXCLUDED.target_oid, columns = EXCLUDED.columns,
			query_fingerprint = '', predicate_cel = NULL, predicate_sql = NULL, last_refresh_at = NULL`,
		f.Name(), f.Table.Pipeline.Name, f.Table.Pipeline.Schema, f.Table.Name, s.Target, f.ColumnsJSON())
	return err
}

// columnsFirst says that the target's columns must change before the
// refresh, in a transaction of their own (Runner.evolveAlone). The
// refresh's transaction returns it having changed nothing; the user never
// sees it.
type columnsFirst struct{}

func (*columnsFirst) Error() string { return "the target's columns change first" }

// afterColumns is a refresh that failed after its target's column changes
// committed: those stay, whatever the refresh's own error says.
type afterColumns struct {
	err     error
	changes []compile.ColumnChange
}

// Error is the refresh's error, saying what stays.
func (e *afterColumns) Error() string {
	return strings.TrimSuffix(strings.TrimSuffix(e.err.Error(), unchanged), "; ") + "; " + e.rolledBack()
}

func (e *afterColumns) Unwrap() error { return e.err }

// rolledBack says what a failed refresh left: the target as it was, or, when
// its column changes committed before it, the target's rows as they were.
func (e *afterColumns) rolledBack() string {
	var names []string
	for _, c := range e.changes {
		names = append(names, c.Change())
	}
	return fmt.Sprintf("the refresh was rolled back; the target's column changes (%s), committed before it, stay, and the next refresh recomputes the window",
		strings.Join(names, ", "))
}

// evolveAlone commits the target's column changes, with the state's record
// of its columns, in a short transaction of its own, before the refresh's.
// ALTER TABLE takes ACCESS EXCLUSIVE until its transaction ends: in the
// refresh's transaction, it would block every reader of the target for the
// whole recompute. Alone, readers wait only while it takes the lock (in
// short attempts: see ddlAttempt), and then for the change itself: an added
// or a dropped column changes only the catalog; a retype also rewrites the
// table, and readers wait for that rewrite, not for the recompute.
//
// The price is that the change is not atomic with the rows. A kill or a
// failure between the two transactions leaves the target's rows as they
// were under the new columns (an added one NULL, as rows outside the window
// keep it for good), and the state saying so with the query's fingerprint
// cleared: the next refresh, whatever the query, recomputes the window
// (QUERY_CHANGED), with nothing left to alter and no --allow-destructive to
// give again. The changes are read again here, under the flow's lock, so
// they are exactly the state's.
func (r *Runner) evolveAlone(ctx context.Context, conn *sql.Conn, f *compile.Flow) ([]compile.ColumnChange, error) {
	deadline := time.Now().Add(r.opts.LockTimeout)
	for {
		attempt := min(ddlAttempt, time.Until(deadline))
		changes, err := r.evolveOnce(ctx, conn, f, max(attempt, time.Millisecond))
		if !isLockTimeout(err) || attempt < ddlAttempt {
			return changes, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(ddlPause):
		}
	}
}

// ddlAttempt bounds each attempt of evolveAlone to take its lock, and
// ddlPause is the rest between two. While an ALTER TABLE waits for ACCESS
// EXCLUSIVE (behind a session holding any lock on the target, a long
// report, an idle transaction), every reader that comes after it queues
// behind it: attempts that give up soon let that queue through, and they
// go on until --lock-timeout has passed, as one long wait would.
const (
	ddlAttempt = 200 * time.Millisecond
	ddlPause   = 50 * time.Millisecond
)

// evolveOnce is one attempt of evolveAlone, waiting at most wait for locks.
func (r *Runner) evolveOnce(ctx context.Context, conn *sql.Conn, f *compile.Flow, wait time.Duration) ([]compile.ColumnChange, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d; %s",
		wait.Milliseconds(), r.opts.StatementTimeout.Milliseconds(), session.Reassert)); err != nil {
		return nil, err
	}
	st, err := loadFlowState(ctx, tx, f.Name())
	if err != nil {
		return nil, err
	}
	changes := f.ColumnChanges(st.Columns)
	if err := r.evolve(ctx, tx, f, changes); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	// Once committed: an attempt that timed out changed nothing.
	for _, c := range changes {
		fmt.Fprintf(r.opts.Log, "%s: %s (committed before the refresh)\n", f.Name(), f.AlterSQL(c))
	}
	return changes, nil
}

// refuseDestructive refuses column changes that lose data unless
// AllowDestructive.
func (r *Runner) refuseDestructive(f *compile.Flow, changes []compile.ColumnChange) error {
	for _, c := range changes {
		if c.Destructive() && !r.opts.AllowDestructive {
			return refuse("flow %s: %s is destructive (%s); rerun with --allow-destructive to apply it", f.Name(), c.Change(), f.Table.Pos)
		}
	}
	return nil
}

// evolve applies column changes (in evolveAlone's transaction): an added
// column is added (rows outside the window keep NULL; the window is
// recomputed); a dropped or retyped column loses data and needs
// AllowDestructive. The state records the new columns and no query
// fingerprint, so that the window is recomputed even should the refresh
// that follows never commit.
func (r *Runner) evolve(ctx context.Context, tx *sql.Tx, f *compile.Flow, changes []compile.ColumnChange) error {
	if len(changes) == 0 {
		return nil
	}
	if err := r.refuseDestructive(f, changes); err != nil {
		return err
	}
	for _, c := range changes {
		if _, err := tx.ExecContext(ctx, f.AlterSQL(c)); err != nil {
			return &alterError{flow: f.Name(), change: c.Change(), err: err}
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE rwc.flows SET columns = $2, query_fingerprint = '' WHERE flow = $1`, f.Name(), f.ColumnsJSON())
	return err
}

// alterError is a column change the server refused (a retype whose cast
// fails on a stored value, say), in rwc's words; a lock timeout is read
// through it (Unwrap).
type alterError struct {
	flow, change string
	err          error
}

func (e *alterError) Error() string {
	return fmt.Sprintf("flow %s: %s failed: %s; nothing was changed", e.flow, e.change, serverWords(e.err))
}

func (e *alterError) Unwrap() error { return e.err }

// createSchema runs CREATE SCHEMA IF NOT EXISTS so that two first refreshes
// of flows in the same new schema, at once, both succeed. IF NOT EXISTS does
// not see a schema another transaction created and has not committed: the
// second waits on pg_namespace's unique index and fails once the first
// commits. The schema is there then, so that error is rolled back and
// ignored.
func createSchema(ctx context.Context, tx *sql.Tx, stmt string) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT rwc_create_schema"); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		var pe *pq.Error
		if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P06") {
			return err
		}
		// ROLLBACK TO keeps the savepoint: release it too, or the rest of
		// the refresh runs in a subtransaction (where, for one, a snapshot
		// cannot be exported).
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT rwc_create_schema"); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT rwc_create_schema")
	return err
}

// write runs a refresh's DELETE and INSERT, those it has, and returns the
// rows each affected (deleted as given without a DELETE). Given counts, it also counts the rows inserted per partition
// value, as the target's probe prints them.
func write(ctx context.Context, tx *sql.Tx, f *compile.Flow, stmts compile.Statements, deleted int64, counts map[string]int64) (int64, int64, error) {
	if stmts.Delete != "" {
		n, err := execCount(ctx, tx, stmts.Delete)
		if err != nil {
			return 0, 0, err
		}
		deleted = n
	}
	if stmts.Insert == "" {
		return deleted, 0, nil
	}
	if counts == nil {
		r, err := userExec(ctx, tx, stmts.Insert)
		if err != nil {
			return 0, 0, queryError(f, err)
		}
		n, err := r.RowsAffected()
		return deleted, n, err
	}
	col := pq.QuoteIdentifier(f.PartitionBy)
	rows, done, err := userRows(ctx, tx, "WITH ins AS ("+stmts.Insert+"\nRETURNING "+col+") SELECT ("+col+")::text, count(*) FROM ins GROUP BY 1")
	if err != nil {
		return 0, 0, queryError(f, err)
	}
	defer done()
	var inserted int64
	for rows.Next() {
		var v sql.NullString
		var n int64
		if err := rows.Scan(&v, &n); err != nil {
			return 0, 0, err
		}
		counts[v.String] += n
		inserted += n
	}
	if err := rows.Err(); err != nil {
		return 0, 0, queryError(f, err)
	}
	return deleted, inserted, nil
}

func execCount(ctx context.Context, tx *sql.Tx, stmt string) (int64, error) {
	r, err := tx.ExecContext(ctx, stmt)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func insertEvent(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, kind string, res *Result, d time.Duration, errText string) error {
	m := map[string]any{"rows_outside_window_lost": res.RowsOutside, "columns": res.Columns, "partitions": res.Partitions}
	if res.RowsLost > 0 {
		m["rows_lost"] = res.RowsLost
	}
	if res.Backfill != nil {
		m["backfill"] = res.Backfill
	}
	details, _ := json.Marshal(m)
	// The event keeps a copy of the flow's target as rwc.flows records it
	// (targetEvidence): what shows, should that row be lost, that rwc
	// created the table.
	_, err := q.ExecContext(ctx, `INSERT INTO rwc.events (flow, kind, action, reasons, predicate_cel, predicate_sql,
		rows_deleted, rows_inserted, started_at, duration_ms, error, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''), $12::jsonb || coalesce((`+targetEvidence+`), '{}'))`,
		res.Flow, kind, res.Action, pq.Array(res.Reasons), res.PredicateCEL, res.PredicateSQL,
		res.RowsDeleted, res.RowsInserted, res.StartedAt, d.Milliseconds(), errText, string(details))
	return err
}

// recordFailure logs a failed refresh outside its rolled-back transaction,
// so the event log shows failures too. It is best effort: the refresh's own
// error is what the user sees.
func (r *Runner) recordFailure(ctx context.Context, res *Result) {
	fail := *res
	fail.RowsDeleted, fail.RowsInserted = 0, 0
	if fail.Action == "" {
		fail.Action = compile.ActionFailed
	}
	_ = insertEvent(context.WithoutCancel(ctx), r.db, eventKindRefreshFailed, &fail, res.Duration, res.Err.Error())
}

// maxAttempts bounds the refreshes of one flow that a concurrent writer
// can make roll back.
const maxAttempts = 3

func isSerializationFailure(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "40001"
}

// overrideBaseline is what an override compares the target with: the
// window the state records (prior), and the partitions of it that DML by
// anyone else changed since the last refresh (targetDirt). store is false
// when there is nothing to compare with (no window, or no fingerprints,
// recorded) or the changes cannot be placed: the override then stores no
// target fingerprints, and the next refresh recomputes its window.
func overrideBaseline(ctx context.Context, tx *sql.Tx, f *compile.Flow, st compile.FlowState) (store bool, prior *predicate.Predicate, dirty []string, err error) {
	prior, ok := f.StoredWindow(st)
	if !ok {
		return false, nil, nil, nil
	}
	if compile.HoldsNull(prior) {
		return false, nil, nil, nil
	}
	stored, err := loadFingerprints(ctx, tx, f.Name())
	if err != nil {
		return false, nil, nil, err
	}
	if !stored.taken {
		return false, nil, nil, nil
	}
	before, err := probeTarget(ctx, tx, f, prior, stored, prior)
	if err != nil {
		return false, nil, nil, err
	}
	dirty, unknown := targetDirt(f, prior, before, stored)
	return !unknown, prior, dirty, nil
}

func isLockTimeout(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// forUpdate locks the flow's state row inside a refresh's transaction; a
// plan reads without locking.
func forUpdate(q queryer) string {
	if _, ok := q.(*sql.Tx); ok {
		return " FOR UPDATE"
	}
	return ""
}

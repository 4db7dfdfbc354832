package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

const (
	eventKindPlanningInformation = "planning_information"
	eventKindRefreshFailed       = "refresh_failed"
	advisoryNamespace            = compile.FlowLockNamespace
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
	// Expectations: how each of the flow's expectations fared on the rows
	// the refresh wrote (none: it has none, or wrote nothing).
	Expectations []compile.ExpectationResult `json:"expectations,omitempty"`
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
	Partitions []string `json:"partitions,omitempty"`
	// Swapped are the first days of the partitions of a partitioned target
	// that the refresh swapped in whole (the rest it deleted and inserted).
	Swapped []string `json:"swapped,omitempty"`
	// Capture: what a flow capturing by triggers found of them (whether
	// nothing changed, so that nothing was probed, or why it probed).
	Capture  string        `json:"capture,omitempty"`
	Duration time.Duration `json:"-"`
	Err      error         `json:"-"`
	// deadAgain: rows the refresh inserted and deleted again (an
	// incremental write the whole window's recompute replaced): dead rows
	// that neither count shows.
	deadAgain int64
	// swapped: rows deleted by swapping their partitions out (no dead
	// rows); staged: rows inserted into staging tables, by the last write.
	swapped, staged int64
	// madePartitions: the refresh created partitions of the target.
	madePartitions bool
}

// Refresh runs one refresh in one transaction under the flow's advisory
// lock: a failure or a kill at any point leaves the target and the state as
// they were. Two things are the exception, committed just before on their
// own, so that readers of the target never wait for the recompute: column
// changes (see evolveAlone), and, beside a DEFAULT partition, the empty
// partitions the refresh needs (see premakeAlone).
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
		var ac *afterFirst
		if errors.As(err, &ac) {
			after = ac.rolledBack()
		}
		err = lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, after, err)
		err = inServerWords(err, after)
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
	var first committedFirst
	for {
		again, err := r.commitFirst(ctx, conn, f, r.refreshLocked(ctx, conn, req, res, resolved), &first)
		if !again {
			return first.wrap(err)
		}
		*res = start
	}
}

// committedFirst is what a refresh committed before its own transaction,
// each in a transaction of its own: the target's column changes
// (evolveAlone), and its partitions beside a DEFAULT one (premakeAlone).
type committedFirst struct {
	evolved  bool
	changes  []compile.ColumnChange
	premakes int // committed
}

// maxPremakes bounds the refreshes that find partitions to make first: a
// second one finds some only when someone dropped one just made.
const maxPremakes = 2

// commitFirst does what a refresh's transaction asked to be committed
// before it (its error err: columnsFirst, partitionsFirst), recording it
// in first, and reports whether the refresh runs again, from the start,
// in a new snapshot that finds nothing left to do first.
func (r *Runner) commitFirst(ctx context.Context, conn *sql.Conn, f *compile.Flow, err error, first *committedFirst) (bool, error) {
	var cols *columnsFirst
	var parts *partitionsFirst
	switch {
	case errors.As(err, &cols) && !first.evolved:
		first.evolved = true
		changes, err := r.evolveAlone(ctx, conn, f)
		if err != nil {
			return false, err
		}
		first.changes = changes
		return true, r.syncIndexes(ctx, conn, f)
	case errors.As(err, &parts) && first.premakes < maxPremakes:
		if err := r.premakeAlone(ctx, conn, f, parts.stmts); err != nil {
			return false, err
		}
		first.premakes++
		return true, nil
	case errors.As(err, &parts):
		return false, fmt.Errorf("flow %s: the partitions it needs went missing again right after it made them (is something dropping them?); %s: find what drops them, then apply again", f.Name(), unchanged)
	}
	return false, err
}

// wrap is a refresh's error, saying what committed before it stays
// (afterFirst).
func (c committedFirst) wrap(err error) error {
	if err == nil || len(c.changes) == 0 && c.premakes == 0 {
		return err
	}
	return &afterFirst{err: err, changes: c.changes, partitions: c.premakes > 0}
}

// decideAfterWrite decides again once the target's probe answered (see
// compile.Await). When DML by someone else changed the window since the
// last refresh, the partitions just written are not enough: the whole
// window is recomputed on top, in this transaction, so that the result is a
// whole-window recompute's; the rows inserted a moment ago are deleted
// again (and counted as dead once).
func (r *Runner) decideAfterWrite(ctx context.Context, tx *sql.Tx, c *capture, pre, dec compile.Decision, stmts *compile.Statements, resolved *predicate.Predicate, obs compile.Observation, res *Result) (compile.Decision, error) {
	final, err := c.decideKnown(pre)
	if err != nil {
		return dec, err
	}
	if dec.Narrowed != nil && final.Narrowed == nil {
		f := c.f
		fmt.Fprintf(r.opts.Log, "%s: the target changed outside rwc within the window: recomputing all of it\n", f.Name())
		whole, err := f.Writes(final, resolved, false, obs)
		if err != nil {
			return dec, err
		}
		_, whole = compile.OnTop(*stmts, whole)
		for _, d := range whole.Discard {
			if _, err := tx.ExecContext(ctx, d); err != nil {
				return dec, err
			}
		}
		w, err := r.write(ctx, tx, f, obs, whole, 0, nil, res.madePartitions)
		if err != nil {
			return dec, err
		}
		// The rows the incremental write inserted into the target itself
		// are deleted again, dead; those it staged go with their tables.
		direct := res.RowsInserted - res.staged
		res.deadAgain = direct
		res.RowsDeleted += w.deleted - direct
		res.RowsInserted = w.inserted
		res.swapped, res.staged = res.swapped+w.swapped, w.staged
		res.madePartitions = res.madePartitions || w.made
		*stmts = whole
	}
	res.Action, res.Reasons, res.Partitions = final.Action, final.Reasons, final.Partitions
	return final, nil
}

func loadFlowState(ctx context.Context, q queryer, flow string) (compile.FlowState, error) {
	var st compile.FlowState
	var columns string
	var cel, det sql.NullString
	var env sql.NullInt64
	var last sql.NullTime
	err := q.QueryRowContext(ctx, `SELECT target_oid, NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = target_oid),
			columns, query_fingerprint, predicate_cel, env_version, determinism, last_refresh_at
		FROM rwc.flows WHERE flow = $1`+forUpdate(q), flow).
		Scan(&st.TargetOID, &st.TargetGone, &columns, &st.QueryFingerprint, &cel, &env, &det, &last)
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

// write runs a refresh's DELETE and INSERT, those it has, and returns the
// rows each affected (deleted as given without a DELETE). Given counts, it also counts the rows inserted per partition
// value, as the target's probe prints them. A partitioned target's missing
// partitions are created first, and its swaps staged after (stage): the
// rows they will remove count as deleted, swapped the rows to leave no
// dead rows behind. madeBefore: this transaction made partitions already
// (an earlier write of the refresh), which no other session sees.
func (r *Runner) write(ctx context.Context, tx *sql.Tx, f *compile.Flow, obs compile.Observation, stmts compile.Statements, deleted int64, counts map[string]int64, madeBefore bool) (written, error) {
	made, err := premake(ctx, tx, f, stmts)
	if err != nil {
		return written{}, err
	}
	if stmts.Delete != "" {
		n, err := execCount(ctx, tx, stmts.Delete)
		if err != nil {
			return written{}, err
		}
		deleted = n
	}
	var inserted int64
	if stmts.Insert != "" {
		n, err := insertRows(ctx, tx, f, stmts.Insert, stmts.Counted, counts)
		if err != nil {
			return written{}, err
		}
		inserted = n
	}
	// The partitions it swaps out are the committed ones (none made just
	// now) and not Citus's, which no exported snapshot covers: they are
	// counted beside the loads.
	beside := !made && !madeBefore && !f.TargetDistributed(obs)
	old, staged, err := r.stage(ctx, tx, f, stmts, counts, beside)
	return written{deleted: deleted + old, inserted: inserted + staged, swapped: old, staged: staged, made: made}, err
}

// written is what a write did: the rows it deleted (swapped among them:
// those in the partitions it swaps out, which leave no dead rows) and
// inserted (staged among them: those in staging tables), and whether it
// created partitions.
type written struct {
	deleted, inserted, swapped, staged int64
	made                               bool
}

// insertRows runs an INSERT of the query's rows (into the target, or a
// staging table) and returns how many it inserted, adding them to counts
// per partition value as c says it counts them.
func insertRows(ctx context.Context, tx *sql.Tx, f *compile.Flow, insert string, c compile.Counted, counts map[string]int64) (int64, error) {
	if !c.PerValue {
		r, err := userExec(ctx, tx, insert)
		if err != nil {
			return 0, queryError(f, err)
		}
		n, err := r.RowsAffected()
		if c.Value != "" && n > 0 && counts != nil {
			counts[c.Value] += n
		}
		return n, err
	}
	rows, done, err := userRows(ctx, tx, insert)
	if err != nil {
		return 0, queryError(f, err)
	}
	defer done()
	var inserted int64
	for rows.Next() {
		var v sql.NullString
		var n int64
		if err := rows.Scan(&v, &n); err != nil {
			return 0, err
		}
		if counts != nil {
			counts[v.String] += n
		}
		inserted += n
	}
	if err := rows.Err(); err != nil {
		return 0, queryError(f, err)
	}
	return inserted, nil
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
	if len(res.Swapped) > 0 {
		m["swapped"] = res.Swapped
	}
	if res.Capture != "" {
		m["capture"] = res.Capture
	}
	if res.RowsLost > 0 {
		m["rows_lost"] = res.RowsLost
	}
	if res.Backfill != nil {
		m["backfill"] = res.Backfill
	}
	if len(res.Expectations) > 0 {
		m["expectations"] = res.Expectations
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
	_ = insertEvent(context.WithoutCancel(ctx), r.db, eventKindRefreshFailed, &fail, res.Duration, eventError(res.Err))
	if len(res.Expectations) > 0 {
		_ = recordResults(context.WithoutCancel(ctx), r.db, res.Flow, res.Expectations, "rolled_back", res.StartedAt)
	}
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
func overrideBaseline(ctx context.Context, tx *sql.Tx, f *compile.Flow, st compile.FlowState, obs compile.Observation) (store bool, prior *predicate.Predicate, dirty []string, err error) {
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
	before, err := probeTarget(ctx, tx, f, prior, stored, prior, obs)
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

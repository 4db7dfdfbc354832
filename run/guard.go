package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// deployedGuards remembers, per deployment, which flows its snapshot
// guards: a deployment never changes, so it is read once per Runner.
type deployedGuards struct {
	mu     sync.Mutex
	id     int64
	guards *guardSet
}

// guardSet is the flows a deployment's snapshot defines with
// reset_allowed: false; all of them when the snapshot no longer loads,
// since it can no longer say which flows it guards.
type guardSet struct {
	flows      map[string]bool // reset_allowed: false
	defined    map[string]bool // every flow the snapshot defines
	unreadable bool
}

func (g *guardSet) protects(flow string) bool {
	return g != nil && (g.unreadable || g.flows[flow])
}

// apply sets st's deployed guard.
func (g *guardSet) apply(st *compile.FlowState, flow string) {
	st.DeployedProtected = g.protects(flow)
	st.DeployedUnreadable = g != nil && g.unreadable
}

// protectedFlows returns the flows whose definition in the snapshot of
// the last deployment has reset_allowed: false (nil: nothing deployed). The
// snapshot is what `rwc apply` deployed, so an edit to the spec that was not
// deployed (not even committed: --allow-dirty) cannot relax a guard
// (compile.Flow.Protected).
//
// The first call reads the last deployment; a later one reads only its id,
// to tell whether the cached guards are still the last deployment's.
func protectedFlows(ctx context.Context, q queryer, cache *deployedGuards) (*guardSet, error) {
	cache.mu.Lock()
	cachedID, cached := cache.id, cache.guards
	cache.mu.Unlock()
	if cached != nil {
		var id int64
		err := q.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM rwc.deployments`).Scan(&id)
		if err != nil || id == 0 {
			return nil, err
		}
		if id == cachedID {
			return cached, nil
		}
	}
	id, _, specs, err := lastDeployment(ctx, q)
	if err != nil || specs == nil {
		return nil, err
	}
	guards := guardsOf(specs)
	cache.mu.Lock()
	defer cache.mu.Unlock()
	cache.id, cache.guards = id, guards
	return guards, nil
}

// guardsOf reads a deployment's snapshot.
func guardsOf(specs map[string]string) *guardSet {
	g := &guardSet{flows: map[string]bool{}, defined: map[string]bool{}}
	p, ds := spec.Load(diff.Snapshot(specs), "")
	g.unreadable = ds.HasErrors()
	for _, pl := range p.Pipelines {
		for _, t := range pl.Tables {
			g.defined[t.Name] = true
			if !t.ResetAllowed {
				g.flows[t.Name] = true
			}
		}
	}
	return g
}

// removedGuard says whether flow, which the specs no longer define, is
// protected: as the last deployment that defined it had it (or whose
// snapshot no longer loads). The apply that deployed its removal records a
// deployment without it, and its guard must outlive that.
func removedGuard(ctx context.Context, db *sql.DB, flow string) (bool, error) {
	// A snapshot that never names the flow cannot define it.
	rows, err := db.QueryContext(ctx, `SELECT specs FROM rwc.deployments WHERE position($1 in specs::text) > 0 ORDER BY id DESC`, flow)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return false, err
		}
		var specs map[string]string
		if err := json.Unmarshal(raw, &specs); err != nil {
			return true, nil
		}
		if g := guardsOf(specs); g.unreadable || g.defined[flow] {
			return g.protects(flow), nil
		}
	}
	return false, rows.Err()
}

// lossRefusal is the refusal of a refresh of a protected flow whose DELETE
// would remove rows its INSERT cannot give back.
// allow says how to allow it.
func lossRefusal(f *compile.Flow, st compile.FlowState, lost int64, what, allow string) error {
	return refuse("flow %s has reset_allowed: false (%s): %s would delete %s that its recompute cannot give back (the query no longer yields them: days the sources dropped, rows written by DML or by an earlier backfill), so rwc refuses it and nothing was changed; narrow the range to what the sources still hold, or, to delete them for good on purpose, %s",
		f.Name(), f.GuardSource(st), what, diag.Plural(int(lost), "row"), allow)
}

// Ways to allow a loss, for lossRefusal.
const (
	allowLossFlag = "pass --allow-loss"
	allowLossFile = "add allow_loss: true to the backfill file (before it starts; or pass rwc apply --allow-loss)"
	allowLossRest = "pass rwc apply --allow-loss (the file itself cannot change once started)"
)

// refuseLoss refuses a backfill file of a protected flow, before it starts
// or resumes, whose batches would delete rows they cannot give back: the
// ledger is not touched, so adding allow_loss: true to a file that has not
// started makes no "changed" file of it. Each batch counts again in its
// own transaction, which is what decides.
func (r *Runner) refuseLoss(ctx context.Context, job *BackfillJob, st compile.BackfillStatus) error {
	if job.AllowLoss || r.opts.AllowLoss {
		return nil
	}
	var cels []string
	allow := allowLossFile
	if st == compile.BackfillPending {
		var err error
		if cels, err = r.planBatches(job); err != nil {
			return err
		}
	} else {
		batches, err := r.pendingBatches(ctx, job)
		if err != nil {
			return err
		}
		for _, b := range batches {
			cels = append(cels, b.cel)
		}
		allow = allowLossRest
	}
	return r.checkLoss(ctx, job.Flow, cels, "backfill "+job.Path, allow)
}

// checkOverrideLoss refuses, before the first of them runs, overrides of f (the
// batches of rwc refresh --where, as CEL) that would delete rows they cannot
// give back when f is protected; nil when f is not, or nothing would be
// lost. Each batch counts again in its own transaction, which is what
// decides.
func (r *Runner) checkOverrideLoss(ctx context.Context, f *compile.Flow, cels []string) error {
	what := "this refresh"
	if len(cels) == 1 {
		what += " of " + diag.Visible(cels[0])
	}
	return r.checkLoss(ctx, f, cels, what, allowLossFlag)
}

func (r *Runner) checkLoss(ctx context.Context, f *compile.Flow, cels []string, what, allow string) error {
	fs, err := r.flowGuard(ctx, f)
	if err != nil || !f.Protected(fs) {
		return err
	}
	obs, err := Observe(ctx, r.db, f, r.opts.StatementTimeout)
	if err != nil {
		return lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, "nothing was changed", err)
	}
	counts, err := f.LossCounts(cels, predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone}, obs)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	lost, err := CountLost(ctx, r.db, f, counts, r.opts.StatementTimeout)
	if err != nil {
		return lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, "nothing was changed", err)
	}
	if lost == 0 {
		return nil
	}
	return lossRefusal(f, fs, lost, what, allow)
}

// LossCountTimeout bounds a loss count outside a refresh (a plan's, or
// the check before a backfill) when no --statement-timeout is given.
const LossCountTimeout = 30 * time.Second

// countLost runs a loss count (Statements.CountLost, Flow.WindowLoss) in
// tx. A lock timeout is no fault of the query's, and is not placed in it.
func countLost(ctx context.Context, tx *sql.Tx, f *compile.Flow, count string) (int64, error) {
	rows, done, err := userRows(ctx, tx, count)
	if isLockTimeout(err) {
		return 0, err
	}
	if err != nil {
		return 0, queryError(f, err)
	}
	defer done()
	var n int64
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, queryError(f, err)
	}
	return n, nil
}

// guardLoss counts, in the refresh's snapshot before its DELETE, the rows
// a refresh of a protected flow would delete and not give back: an
// override's (a backfill batch, --where), or a window refresh's where its
// window reaches beyond the last one's. It refuses the refresh when there
// are any, unless the loss is allowed: the count is exactly what the write
// would lose.
func (r *Runner) guardLoss(ctx context.Context, tx *sql.Tx, req Request, st compile.FlowState, stmts compile.Statements, window *predicate.Predicate, obs compile.Observation) (int64, error) {
	f := req.Flow
	if obs.TargetMissing || !f.Protected(st) {
		return 0, nil
	}
	count, what := stmts.CountLost, "this refresh of "+diag.Visible(stmts.PredicateCEL)
	if req.Mode == Window {
		count, what = f.WindowLoss(st, window, obs), widenedWhat(st, window)
	}
	if count == "" {
		return 0, nil
	}
	lost, err := countLost(ctx, tx, f, count)
	if err != nil || lost == 0 {
		return lost, err
	}
	if !req.AllowLoss && !r.opts.AllowLoss {
		allow := allowLossFlag
		if req.Backfill != nil {
			allow = allowLossRest
		}
		return lost, lossRefusal(f, st, lost, what, allow)
	}
	fmt.Fprintf(r.opts.Log, "%s: deletes %d rows it cannot give back, for good (allowed)\n", f.Name(), lost)
	return lost, nil
}

// widenedWhat names a window refresh that reaches beyond the last window,
// for lossRefusal.
func widenedWhat(st compile.FlowState, window *predicate.Predicate) string {
	return fmt.Sprintf("this refresh of its window %s, wider than the last refresh's %s,",
		diag.Visible(window.Root.CEL()), diag.Visible(st.PredicateCEL))
}

// flowGuard reads what decides whether f is protected: its state, with
// the deployed definition's guard.
func (r *Runner) flowGuard(ctx context.Context, f *compile.Flow) (compile.FlowState, error) {
	st, err := loadFlowState(ctx, r.db, f.Name())
	if err == nil {
		var guards *guardSet
		if guards, err = protectedFlows(ctx, r.db, &r.guards); err == nil {
			guards.apply(&st, f.Name())
		}
	}
	if err != nil {
		return compile.FlowState{}, lockTimeout(ctx, r.db, "flow "+f.Name(), stateRels, r.opts.LockTimeout, "nothing was changed", err)
	}
	return st, nil
}

// CountLost runs loss counts of f (Statements.CountLost, Flow.WindowLoss)
// in one read-only snapshot and adds them up. A refresh counts again in its
// own transaction, which is what decides; this is for refusing an apply or a
// backfill before it starts, and for plans. The counts run the query, so
// they are bounded by timeout (0: LossCountTimeout): a plan must not scan
// production for long.
func CountLost(ctx context.Context, db *sql.DB, f *compile.Flow, counts []string, timeout time.Duration) (int64, error) {
	tx, err := readOnly(ctx, db, timeout)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, f.Target()).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var total int64
	for _, c := range counts {
		n, err := countLost(ctx, tx, f, c)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// readOnly begins a read-only snapshot whose statements are bounded by
// timeout (0: LossCountTimeout), read with the parser's settings.
func readOnly(ctx context.Context, db *sql.DB, timeout time.Duration) (*sql.Tx, error) {
	if timeout <= 0 {
		timeout = LossCountTimeout
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL DateStyle = ISO; SET LOCAL statement_timeout = %d; %s", timeout.Milliseconds(), session.Reassert)); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// refuseLosses refuses the whole apply, before any flow is refreshed, when
// a refresh of a protected flow would delete rows it cannot give back and
// was not allowed to: a window grown onto history, a backfill file's
// batches (outside the window, which the flow's own refresh recomputes
// first). Each refresh counts again in its own transaction, which decides;
// counting here too makes the refusal come before anything changed, not
// after the flows before it committed. Every refusal is reported at once.
func (r *Runner) refuseLosses(ctx context.Context, p *compile.Project, jobs []*BackfillJob, ids []BackfillIdentity) error {
	if r.opts.AllowLoss {
		return nil
	}
	var refused *multierror.Error
	add := func(err error) error {
		var ref *Refusal
		if errors.As(err, &ref) {
			refused = multierror.Append(refused, err)
			return nil
		}
		return err
	}
	guards, err := protectedFlows(ctx, r.db, &r.guards)
	if err != nil {
		return err
	}
	for _, f := range p.Flows {
		if err := add(r.refuseWindowLoss(ctx, f, guards)); err != nil {
			return err
		}
	}
	for i, j := range jobs {
		if ids[i].Status == compile.BackfillPending || ids[i].Status == compile.BackfillPartial {
			if err := add(r.refuseLoss(ctx, j, ids[i].Status)); err != nil {
				return err
			}
		}
	}
	if refused == nil {
		return nil
	}
	refused.ErrorFormat = func(errs []error) string {
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = e.Error()
		}
		return strings.Join(lines, "\n")
	}
	return &Refusal{refused.Error()}
}

// refuseWindowLoss is refuseLosses for f's own window refresh.
func (r *Runner) refuseWindowLoss(ctx context.Context, f *compile.Flow, guards *guardSet) error {
	if f.Predicate == nil || (f.Table.ResetAllowed && !guards.protects(f.Name())) {
		return nil
	}
	fs, err := loadFlowState(ctx, r.db, f.Name())
	if err != nil {
		return err
	}
	guards.apply(&fs, f.Name())
	st := fs
	window, err := f.Predicate.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone})
	if err != nil {
		return err
	}
	if f.WindowLoss(st, window, compile.Observation{}) == "" {
		return nil // whatever the observation: it only shapes the count
	}
	obs, err := Observe(ctx, r.db, f, r.opts.StatementTimeout)
	var lost int64
	if err == nil {
		lost, err = CountLost(ctx, r.db, f, []string{f.WindowLoss(st, window, obs)}, r.opts.StatementTimeout)
	}
	if err != nil {
		return lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, "nothing was changed", err)
	}
	if lost == 0 {
		return nil
	}
	return lossRefusal(f, st, lost, widenedWhat(st, window), allowLossFlag)
}

// OutsideWindow counts the rows of f's target outside its window resolved
// at opts.Now: what a full refresh now deletes for good (0 when the
// target does not exist yet). It only reads; window is the window's CEL.
func OutsideWindow(ctx context.Context, db *sql.DB, f *compile.Flow, opts Options) (n int64, window string, err error) {
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	p, err := f.Predicate.Resolve(predicate.Resolution{Now: now, Zone: opts.Zone})
	if err != nil {
		return 0, "", err
	}
	stmts, err := f.Statements(p, true, compile.Observation{})
	if err != nil {
		return 0, "", err
	}
	tx, err := readOnly(ctx, db, opts.StatementTimeout)
	if err != nil {
		return 0, "", err
	}
	defer tx.Rollback()
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, f.Target()).Scan(&exists); err != nil || !exists {
		return 0, stmts.PredicateCEL, err
	}
	err = tx.QueryRowContext(ctx, stmts.CountOutside).Scan(&n)
	return n, stmts.PredicateCEL, err
}

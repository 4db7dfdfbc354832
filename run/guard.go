package run

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

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
	guards map[string]bool
}

// protectedFlows returns the flows whose definition in the snapshot of
// the last deployment has reset_allowed: false. The snapshot is what
// `rwc apply` deployed, so an edit to the spec that was not deployed (not
// even committed: --allow-dirty) cannot relax a guard (compile.Flow.Protected).
func protectedFlows(ctx context.Context, q queryer, cache *deployedGuards) (map[string]bool, error) {
	id, _, specs, err := lastDeployment(ctx, q)
	if err != nil || specs == nil {
		return nil, err
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.guards == nil || cache.id != id {
		cache.id, cache.guards = id, guardsOf(specs)
	}
	return cache.guards, nil
}

// guardsOf reads a deployment's snapshot: the flows it defines with
// reset_allowed: false.
func guardsOf(specs map[string]string) map[string]bool {
	guards := map[string]bool{}
	p, _ := spec.Load(diff.Snapshot(specs), "")
	for _, pl := range p.Pipelines {
		for _, t := range pl.Tables {
			if !t.ResetAllowed {
				guards[t.Name] = true
			}
		}
	}
	return guards
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
func (r *Runner) refuseLoss(ctx context.Context, job *BackfillJob, st BackfillStatus) error {
	if job.AllowLoss {
		return nil
	}
	var cels []string
	allow := allowLossFile
	if st == BackfillPending {
		var err error
		if cels, err = r.PlanBatches(job); err != nil {
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

// CheckLoss refuses, before the first of them runs, overrides of f (the
// batches of rwc refresh --where, as CEL) that would delete rows they cannot
// give back when f is protected; nil when f is not, or nothing would be
// lost. Each batch counts again in its own transaction, which is what
// decides.
func (r *Runner) CheckLoss(ctx context.Context, f *compile.Flow, cels []string) error {
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
	preds, err := r.resolveAll(f, cels)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	lost, err := LostRows(ctx, r.db, f, preds, r.opts.StatementTimeout)
	if err != nil {
		return lockTimeout(ctx, r.db, "flow "+f.Name(), flowRels(f), r.opts.LockTimeout, "nothing was changed", err)
	}
	if lost == 0 {
		return nil
	}
	return lossRefusal(f, fs, lost, what, allow)
}

// resolveAll compiles and resolves batch predicates (CEL) of f.
func (r *Runner) resolveAll(f *compile.Flow, cels []string) ([]*predicate.Predicate, error) {
	var out []*predicate.Predicate
	for _, cel := range cels {
		p, issues := f.CompilePredicate(cel)
		if len(issues) > 0 {
			return nil, fmt.Errorf("%s: %s", cel, issues[0].Message)
		}
		resolved, err := p.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone})
		if err != nil {
			return nil, err
		}
		out = append(out, resolved)
	}
	return out, nil
}

// LossCountTimeout bounds a loss count outside a refresh (a plan's, or
// the check before a backfill) when no --statement-timeout is given.
const LossCountTimeout = 30 * time.Second

// countLost runs a refresh's CountLost in tx. A lock timeout is no fault
// of the query's, and is not placed in it.
func countLost(ctx context.Context, tx *sql.Tx, f *compile.Flow, s compile.Statements) (int64, error) {
	rows, done, err := userRows(ctx, tx, s.CountLost)
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

// flowGuard reads what decides whether f is protected: its state, with
// the deployed definition's guard.
func (r *Runner) flowGuard(ctx context.Context, f *compile.Flow) (compile.FlowState, error) {
	st, err := loadFlowState(ctx, r.db, f.Name())
	if err == nil {
		var guards map[string]bool
		if guards, err = protectedFlows(ctx, r.db, &r.guards); err == nil {
			st.DeployedProtected = guards[f.Name()]
		}
	}
	if err != nil {
		return compile.FlowState{}, lockTimeout(ctx, r.db, "flow "+f.Name(), stateRels, r.opts.LockTimeout, "nothing was changed", err)
	}
	return st.FlowState, nil
}

// LostRows counts, in one read-only snapshot, the rows that overrides of f
// with the resolved predicates would delete and not give back. A refresh
// counts again in its own transaction, which is what decides; this is for
// refusing a backfill before it starts, and for plans. The count runs the
// query, so it is bounded by timeout (0: LossCountTimeout): a plan must
// not scan production for long.
func LostRows(ctx context.Context, db *sql.DB, f *compile.Flow, preds []*predicate.Predicate, timeout time.Duration) (int64, error) {
	if timeout <= 0 {
		timeout = LossCountTimeout
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL DateStyle = ISO; SET LOCAL statement_timeout = %d; %s", timeout.Milliseconds(), session.Reassert)); err != nil {
		return 0, err
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, f.Target()).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var total int64
	for _, p := range preds {
		s, err := f.Statements(p, false)
		if err != nil {
			return 0, err
		}
		n, err := countLost(ctx, tx, f, s)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

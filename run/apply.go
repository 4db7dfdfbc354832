package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/rwc-dev/rwc/compile"
)

// Deployment is what `rwc apply` records once every flow is refreshed.
type Deployment struct {
	Commit string // "" outside a git work tree
	Dirty  bool
	By     string
	// Specs is a snapshot of every spec file, by path, so later plans can
	// diff against it even where the commit is not available.
	Specs map[string]string
	// Partial: only some flows were selected (--select); the apply records
	// no deployment, which would mark the specs of flows it did not run as
	// deployed.
	Partial bool
}

// Apply refreshes every flow in dependency order and records the
// deployment when all succeeded. A flow whose dependency failed is skipped:
// refreshing it would read a target that is not up to date.
func (r *Runner) Apply(ctx context.Context, p *compile.Project, dep Deployment, each func(Result)) ([]Result, error) {
	return r.ApplyAll(ctx, p, dep, nil, each, nil)
}

// ApplyAll is Apply with backfill files: each pending one runs once, after
// its flow's own refresh, in file order.
func (r *Runner) ApplyAll(ctx context.Context, p *compile.Project, dep Deployment, jobs []*BackfillJob, each func(Result), progress func(BatchProgress)) ([]Result, error) {
	if err := r.preflight(ctx, p); err != nil {
		return nil, r.stateLocked(ctx, "", "nothing was changed", err)
	}
	if err := r.dropStaleMaintenance(ctx, p); err != nil {
		return nil, r.stateLocked(ctx, "dropping the triggers of flows no longer maintained immediately", "nothing was changed", err)
	}
	ids, err := r.refuseChangedBackfills(ctx, jobs)
	if err == nil {
		err = r.refuseLosses(ctx, p, jobs, ids)
	}
	if err != nil {
		return nil, r.stateLocked(ctx, "", "nothing was changed", err)
	}
	var results []Result
	failed := map[string]bool{}
	skipped := 0
	tally := &Tally{}
	batchDone := func(b BatchProgress) {
		tally.Batch(jobLabel(b.Job), b.Batch, b.Total)
		if progress != nil {
			progress(b)
		}
	}
	for i, f := range p.Flows {
		if err := tally.Interrupted(ctx, nil, flowNames(p.Flows[i:]), applyNext); err != nil {
			return results, err
		}
		var res Result
		var blocked string
		for _, d := range f.DependsOn {
			if failed[d.Name()] {
				blocked = d.Name()
			}
		}
		if blocked != "" {
			res = Result{Outcome: Outcome{Flow: f.Name(), Action: compile.ActionSkipped, Reasons: []compile.Reason{}},
				Err: fmt.Errorf("skipped: it reads the target of %s, whose refresh failed", blocked)}
			skipped++
		} else {
			res = r.Refresh(ctx, Request{Flow: f, Mode: Window})
		}
		if res.Err != nil {
			failed[f.Name()] = true
		}
		results = append(results, res)
		tally.Refreshed(res)
		// A refresh the interrupt rolled back is told of in its account.
		if each != nil && (res.Err == nil || ctx.Err() == nil) {
			each(res)
		}
		if err := tally.Interrupted(ctx, res.Err, flowNames(p.Flows[i+1:]), applyNext); err != nil {
			return results, err
		}
		if res.Err != nil {
			continue
		}
		for _, j := range jobs {
			if j.Flow != f {
				continue
			}
			// Leave the window out of a new backfill's batches only when
			// this refresh recomputed all of it; an incremental refresh
			// recomputed what it saw change, and a backfill is often for
			// what rwc cannot see.
			j.KeepWindow = res.Action != compile.ActionCreate && res.Action != compile.ActionRecomputeWindow && res.Action != compile.ActionFullRefresh
			if _, err := r.Backfill(ctx, j, batchDone); err != nil {
				if err := tally.Interrupted(ctx, err, flowNames(p.Flows[i+1:]), applyNext); err != nil {
					return results, err
				}
				failed[f.Name()] = true
				fail := Result{Outcome: Outcome{Flow: f.Name(), Action: compile.ActionBackfill, Reasons: []compile.Reason{compile.ReasonBackfill}}, Err: err}
				results = append(results, fail)
				if each != nil {
					each(fail)
				}
				break
			}
		}
	}
	if len(failed) > 0 {
		return results, applyFailures(results, len(failed)-skipped, skipped, len(p.Flows))
	}
	if err := tally.Interrupted(ctx, nil, nil, applyNext); err != nil {
		return results, err
	}
	if dep.Partial {
		return results, nil
	}
	err = r.recordDeployment(ctx, dep)
	return results, r.stateLocked(ctx, "recording the deployment", "every flow was refreshed, but the deployment was not recorded: run rwc apply again to record it", err)
}

// applyFailures is the error of an apply some of whose flows failed: how
// many, and each failure on a line of its own, so that the end of a CI log
// says what to look at without scrolling back.
func applyFailures(results []Result, failed, skipped, flows int) error {
	var errs *multierror.Error
	for _, res := range results {
		if res.Err != nil {
			line, _, _ := strings.Cut(res.Err.Error(), "\n")
			if !strings.Contains(line, "flow "+res.Flow+":") {
				line = "flow " + res.Flow + ": " + line
			}
			errs = multierror.Append(errs, errors.New(line))
		}
	}
	msg := fmt.Sprintf("%d of %d flows failed", failed, flows)
	if skipped > 0 {
		msg += fmt.Sprintf(" and %d were skipped", skipped)
	}
	errs.ErrorFormat = func(es []error) string {
		lines := []string{msg + "; the deployment was not recorded:"}
		for _, e := range es {
			lines = append(lines, "  - "+e.Error())
		}
		return strings.Join(lines, "\n")
	}
	return errs
}

// applyNext is what the next rwc apply does after an interrupted one.
const applyNext = "the deployment was not recorded; the next rwc apply resumes: it refreshes every flow again, and each backfill goes on at its first batch not committed"

func flowNames(flows []*compile.Flow) []string {
	var names []string
	for _, f := range flows {
		names = append(names, "flow "+f.Name())
	}
	return names
}

// stateLocked is lockTimeout for a statement on rwc's state tables alone.
func (r *Runner) stateLocked(ctx context.Context, subject, after string, err error) error {
	return lockTimeout(ctx, r.db, subject, stateRels, r.opts.LockTimeout, after, err)
}

// refuseChangedBackfills refuses the whole apply, before anything is
// changed, when a backfill file is an applied one changed: edited in place,
// or renamed and edited (IdentifyBackfills).
func (r *Runner) refuseChangedBackfills(ctx context.Context, jobs []*BackfillJob) ([]BackfillIdentity, error) {
	files := make([]BackfillFile, len(jobs))
	for i, j := range jobs {
		files[i] = BackfillFile{Key: j.Path, Hash: j.Hash(), Flow: j.Flow.Name()}
	}
	ids, err := IdentifyBackfills(ctx, r.db, files)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		switch {
		case id.Status != compile.BackfillChanged:
		case id.Entry == jobs[i].Path:
			return nil, refuse("backfill %s was changed after it was applied (or started), nothing was changed: a backfill file is applied once; restore it, or commit the new range as a new file", jobs[i].Path)
		default:
			return nil, refuse("backfill %s is new to the ledger, but %s, a backfill of %s that was applied (or started), left the specs since the last deployment: this is read as that file renamed and edited, and nothing was changed; %s",
				jobs[i].Path, id.Entry, jobs[i].Flow.Name(), compile.RenamedBackfillHint(jobs[i].Path, id.Entry))
		}
	}
	return ids, nil
}

func (r *Runner) recordDeployment(ctx context.Context, dep Deployment) error {
	specs, err := json.Marshal(dep.Specs)
	if err != nil {
		return err
	}
	_, err = r.db.ExecContext(ctx, `INSERT INTO rwc.deployments (commit, dirty, deployed_by, specs) VALUES (NULLIF($1, ''), $2, $3, $4)`,
		dep.Commit, dep.Dirty, dep.By, string(specs))
	return err
}

// preflight refuses the whole apply, before any flow is refreshed, when a
// flow needs a destructive column change that was not allowed: half an
// apply is harder to reason about than none.
func (r *Runner) preflight(ctx context.Context, p *compile.Project) error {
	if r.opts.AllowDestructive {
		return nil
	}
	stored, err := storedColumns(ctx, r.db)
	if err != nil {
		return err
	}
	var refused []string
	for _, f := range p.Flows {
		raw, ok := stored[f.Name()]
		if !ok {
			continue
		}
		var columns []compile.StoredColumn
		if err := json.Unmarshal(raw, &columns); err != nil {
			return fmt.Errorf("state of flow %s: columns: %v", f.Name(), err)
		}
		for _, c := range f.ColumnChanges(columns) {
			if c.Destructive() {
				refused = append(refused, fmt.Sprintf("%s: %s (%s)", f.Name(), c.Change(), f.Table.Pos))
			}
		}
	}
	if len(refused) > 0 {
		return &Refusal{fmt.Sprintf("destructive changes need --allow-destructive, nothing was changed: %s", strings.Join(refused, "; "))}
	}
	return nil
}

// storedColumns reads the columns rwc.flows records for every flow, as
// JSON: one statement however many flows there are (the preflight of an
// apply read each flow's row on its own, two round trips a flow).
func storedColumns(ctx context.Context, db *sql.DB) (map[string][]byte, error) {
	rows, err := db.QueryContext(ctx, `SELECT flow, columns FROM rwc.flows`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := map[string][]byte{}
	for rows.Next() {
		var flow string
		var columns []byte
		if err := rows.Scan(&flow, &columns); err != nil {
			return nil, err
		}
		stored[flow] = columns
	}
	return stored, rows.Err()
}

// Removed is a flow the state knows that the specs no longer define.
type Removed struct {
	Flow   string
	Target string
	// Protected: the flow's deployed definition has reset_allowed: false
	// (or the deployed specs no longer load); --drop-removed keeps it.
	Protected bool
}

// KeptBecause says why a removed flow's target is kept.
func (rm Removed) KeptBecause(dropRemoved bool) string {
	if rm.Protected {
		return "it was deployed with reset_allowed: false, which --drop-removed respects: deploy reset_allowed: true for it first, then remove it, or drop the table yourself"
	}
	return "rwc apply --drop-removed drops it"
}

// RemovedFlows lists flows in the state that p no longer has, each with
// the guard of the last deployment that defined it (removedGuard).
func (r *Runner) RemovedFlows(ctx context.Context, p *compile.Project) ([]Removed, error) {
	guards, err := protectedFlows(ctx, r.db, &r.guards)
	if err != nil {
		return nil, r.stateLocked(ctx, "listing removed flows", "nothing was dropped", err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT flow, quote_ident(target_schema) || '.' || quote_ident(target_table) FROM rwc.flows ORDER BY flow`)
	if err != nil {
		return nil, r.stateLocked(ctx, "listing removed flows", "nothing was dropped", err)
	}
	defer rows.Close()
	var out []Removed
	for rows.Next() {
		var rm Removed
		if err := rows.Scan(&rm.Flow, &rm.Target); err != nil {
			return nil, err
		}
		if p.Flow(rm.Flow) == nil {
			out = append(out, rm)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, rm := range out {
		if guards != nil && (guards.unreadable || guards.defined[rm.Flow]) {
			out[i].Protected = guards.protects(rm.Flow)
			continue
		}
		if out[i].Protected, err = removedGuard(ctx, r.db, rm.Flow); err != nil {
			return nil, r.stateLocked(ctx, "listing removed flows", "nothing was dropped", err)
		}
	}
	return out, nil
}

// DropRemoved drops a removed flow's target and forgets the flow: the
// explicit opt-in (--drop-removed) for what a removed flow leaves. A
// protected one is refused: its guard is relaxed by deploying that first.
func (r *Runner) DropRemoved(ctx context.Context, rm Removed) (err error) {
	if rm.Protected {
		return refuse("flow %s is kept: %s", rm.Flow, rm.KeptBecause(true))
	}
	defer func() {
		rels := append([]lockedRel{{role: "target", name: rm.Target, sql: rm.Target}}, stateRels...)
		err = lockTimeout(ctx, r.db, "", rels, r.opts.LockTimeout, "nothing was dropped", err)
	}()
	tx, err := beginWaiting(ctx, r.db, r.opts.LockTimeout)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, advisoryNamespace+rm.Flow); err != nil {
		return r.flowBusy(ctx, rm.Flow, "nothing was dropped", err)
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+rm.Target); err != nil {
		return err
	}
	for _, q := range []string{`DELETE FROM rwc.fingerprints WHERE flow = $1`, `DELETE FROM rwc.captures WHERE flow = $1`, `DELETE FROM rwc.expectation_results WHERE flow = $1`, `DELETE FROM rwc.flows WHERE flow = $1`} {
		if _, err := tx.ExecContext(ctx, q, rm.Flow); err != nil {
			return err
		}
	}
	return tx.Commit()
}

package run

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// DefaultBatchDays is the batch size of a backfill that names none.
const DefaultBatchDays = compile.DefaultBatchDays

// BackfillJob is one backfill file to apply.
type BackfillJob struct {
	Path      string // as the spec directory shows it; the ledger's key
	Content   string
	Flow      *compile.Flow
	Where     *predicate.Predicate
	Reason    string
	BatchDays int
	Commit    string
	// KeepWindow: do not leave the flow's window out of the batches (a
	// command-line override runs without the flow's own refresh first).
	KeepWindow bool
	// AllowLoss: the file's allow_loss: true (or rwc apply --allow-loss):
	// on a protected flow, its batches may delete rows they cannot give back.
	AllowLoss bool
	// Present: the ledger keys of all the project's backfill files now. A
	// ledger entry with this file's content under a key not among them is
	// this file, moved; under a key among them, this file is a copy, which
	// runs as a backfill of its own.
	Present []string
}

// Hash identifies the file's content: a file changed after it was applied
// is an error, not a new backfill.
func (j BackfillJob) Hash() string {
	h := sha256.Sum256([]byte(j.Content))
	return hex.EncodeToString(h[:])
}

// BatchProgress reports one committed batch.
type BatchProgress struct {
	Job          *BackfillJob
	Batch, Total int
	Result       Result
}

// LedgerStatus is what the ledger says of the backfill file at path with
// content hash, present the ledger keys of all the project's backfill files.
// A file the ledger does not know at path but knows by its content at a
// path no longer present (the spec directory or the file was renamed) is
// that entry: a backfill is applied once, and running it again after the
// sources dropped old rows would delete what the target kept. A copy of a
// file still present is a backfill of its own. This is one file's view:
// IdentifyBackfills, over all of them, also knows a file renamed and edited.
func LedgerStatus(ctx context.Context, q queryer, path, hash string, present []string) (compile.BackfillStatus, error) {
	st, _, err := ledgerEntry(ctx, q, path, hash, present)
	return st, err
}

// BackfillFile is one of the project's backfill files, as the ledger sees
// it.
type BackfillFile struct {
	Key  string // its ledger key (BackfillJob.Path)
	Hash string // BackfillJob.Hash
	Flow string
}

// BackfillIdentity is what the ledger says a backfill file is.
type BackfillIdentity struct {
	Status compile.BackfillStatus
	// Entry is the ledger key of the backfill the file is: its own key, the
	// key it was applied under before a rename, or, for a file changed
	// after a rename (Status compile.BackfillChanged), the applied file it is read
	// as. Empty for a new file.
	Entry string
}

// IdentifyBackfills says what each of the project's backfill files is, all
// of them at once (present, their keys, is derived from files). A file is
// the ledger entry under its key (compile.BackfillChanged when its content is
// other), else the entry with its content under a key no longer present
// (the file moved). A file the ledger knows neither way is new, unless an
// entry of its flow is left that no file is and that the last deployment
// still had (by its content), or that started after it: an applied
// backfill file left the specs as this one came, which is that file
// renamed and edited, compile.BackfillChanged with Entry that file's key. The
// content of a file is all there is to know it by after both a rename and
// an edit, so the pairing is by flow; a backfill file whose deletion was
// deployed is history, and one added after it is new.
func IdentifyBackfills(ctx context.Context, db *sql.DB, files []BackfillFile) (_ []BackfillIdentity, err error) {
	defer func() { err = lockTimeout(ctx, db, "the backfill ledger", stateRels, 0, "nothing was changed", err) }()
	present := make([]string, len(files))
	for i, f := range files {
		present[i] = f.Key
	}
	out := make([]BackfillIdentity, len(files))
	claimed := map[string]bool{}
	var newFlows []string
	for i, f := range files {
		st, key, err := ledgerEntry(ctx, db, f.Key, f.Hash, present)
		if err != nil {
			return nil, err
		}
		if st == compile.BackfillPending {
			newFlows = append(newFlows, f.Flow)
			continue
		}
		out[i] = BackfillIdentity{Status: st, Entry: key}
		claimed[key] = true
	}
	if len(newFlows) == 0 {
		return out, nil
	}
	left, err := leftEntries(ctx, db, newFlows, claimed)
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		if out[i].Entry != "" {
			continue
		}
		if e, ok := left[f.Flow]; ok {
			out[i] = BackfillIdentity{Status: compile.BackfillChanged, Entry: e}
		}
	}
	return out, nil
}

// leftEntries maps each of flows to the oldest ledger entry of that flow
// that is not claimed by a present file and is not yet history: the last
// deployment had a file with its content, or it started after that
// deployment (or none was recorded).
func leftEntries(ctx context.Context, db *sql.DB, flows []string, claimed map[string]bool) (map[string]string, error) {
	deployed := map[string]bool{}
	_, _, files, err := lastDeployment(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, content := range files {
		deployed[BackfillJob{Content: content}.Hash()] = true
	}
	rows, err := db.QueryContext(ctx, `SELECT b.path, b.flow, b.content_hash, coalesce(b.started_at > d.deployed_at, true)
		FROM rwc.backfills b LEFT JOIN (SELECT deployed_at FROM rwc.deployments ORDER BY id DESC LIMIT 1) d ON true
		WHERE b.flow = ANY($1) ORDER BY b.started_at, b.path`, pq.Array(flows))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	left := map[string]string{}
	for rows.Next() {
		var path, flow, hash string
		var since bool
		if err := rows.Scan(&path, &flow, &hash, &since); err != nil {
			return nil, err
		}
		if _, ok := left[flow]; ok || claimed[path] || !(since || deployed[hash]) {
			continue
		}
		left[flow] = path
	}
	return left, rows.Err()
}

// ledgerEntry is LedgerStatus with the path the ledger knows the file by.
func ledgerEntry(ctx context.Context, q queryer, path, hash string, present []string) (compile.BackfillStatus, string, error) {
	var stored string
	var finished sql.NullTime
	err := q.QueryRowContext(ctx, `SELECT content_hash, finished_at FROM rwc.backfills WHERE path = $1`, path).Scan(&stored, &finished)
	switch {
	case err == sql.ErrNoRows:
		var other string
		err := q.QueryRowContext(ctx, `SELECT path, finished_at FROM rwc.backfills WHERE content_hash = $1 AND path <> ALL($2)
			ORDER BY started_at, path LIMIT 1`, hash, pq.Array(append([]string{path}, present...))).Scan(&other, &finished)
		switch {
		case err == sql.ErrNoRows:
			return compile.BackfillPending, path, nil
		case err != nil:
			return 0, "", err
		case finished.Valid:
			return compile.BackfillApplied, other, nil
		}
		return compile.BackfillPartial, other, nil
	case err != nil:
		return 0, "", err
	case stored != hash:
		return compile.BackfillChanged, path, nil
	case finished.Valid:
		return compile.BackfillApplied, path, nil
	}
	return compile.BackfillPartial, path, nil
}

// Backfill applies a backfill file exactly once. The batches are planned
// and recorded when it starts; each batch is its own transaction and marks
// itself done in the ledger as it commits, so a failed or killed backfill
// resumes at the first unfinished batch, recomputing nothing twice and
// skipping nothing. The flow's window is left out of the batches: the flow's
// own refresh, which runs first, recomputes it.
func (r *Runner) Backfill(ctx context.Context, job *BackfillJob, progress func(BatchProgress)) (done bool, err error) {
	defer func() {
		// A refresh's lock timeout says what it waited for already; this
		// is the ledger's.
		err = r.stateLocked(ctx, "backfill "+job.Path, "the batches committed before are kept; the next rwc apply resumes after them", err)
	}()
	st, key, err := ledgerEntry(ctx, r.db, job.Path, job.Hash(), job.Present)
	if err != nil {
		return false, err
	}
	if key != job.Path {
		fmt.Fprintf(r.opts.Log, "backfill %s: the ledger has it as %s (same content): applied once, under that name\n", job.Path, key)
		moved := *job
		moved.Path = key
		job = &moved
	}
	switch st {
	case compile.BackfillApplied:
		return false, nil
	case compile.BackfillChanged:
		return false, refuse("backfill %s was changed after it was applied (or started): a backfill file is applied once; restore it, or commit the new range as a new file", job.Path)
	}
	if err := r.refuseLoss(ctx, job, st); err != nil {
		return false, err
	}
	if st == compile.BackfillPending {
		if err := r.startBackfill(ctx, job); err != nil {
			return false, err
		}
		// Another rwc may have started it first, with other content.
		if st, err := LedgerStatus(ctx, r.db, job.Path, job.Hash(), job.Present); err != nil {
			return false, err
		} else if st == compile.BackfillChanged {
			return false, refuse("backfill %s was started by another rwc with other content: a backfill file is applied once; restore it, or commit the new range as a new file", job.Path)
		}
	}
	batches, err := r.pendingBatches(ctx, job)
	if err != nil {
		return false, err
	}
	total, err := r.batchCount(ctx, job.Path)
	if err != nil {
		return false, err
	}
	for _, b := range batches {
		p, issues := job.Flow.CompilePredicate(b.cel)
		if len(issues) > 0 {
			return false, fmt.Errorf("backfill %s batch %d: %s", job.Path, b.n, issues[0].Message)
		}
		n := b.n
		var note *BackfillNote
		if job.Path != "" && job.Reason != "" {
			note = &BackfillNote{File: job.Path, Reason: job.Reason, Batch: n, Of: total}
		}
		res := r.Refresh(ctx, Request{Flow: job.Flow, Mode: Override, Where: p, Backfill: note, AllowLoss: job.AllowLoss,
			Record: func(ctx context.Context, tx *sql.Tx, res *Result) error {
				// Under the flow's lock: a batch another rwc apply committed
				// since pendingBatches read the ledger is not run twice.
				done, err := tx.ExecContext(ctx, `UPDATE rwc.backfill_batches SET rows_deleted = $3, rows_inserted = $4, committed_at = clock_timestamp()
					WHERE path = $1 AND batch = $2 AND committed_at IS NULL`, job.Path, n, res.RowsDeleted, res.RowsInserted)
				if err != nil {
					return err
				}
				if k, err := done.RowsAffected(); err != nil {
					return err
				} else if k == 0 {
					return errBatchTaken
				}
				_, err = tx.ExecContext(ctx, `UPDATE rwc.backfills SET rows_deleted = rows_deleted + $2, rows_inserted = rows_inserted + $3 WHERE path = $1`,
					job.Path, res.RowsDeleted, res.RowsInserted)
				return err
			}})
		if errors.Is(res.Err, errBatchTaken) {
			continue // rolled back: another rwc apply ran this batch
		}
		if res.Err != nil {
			if ctx.Err() != nil {
				return false, &stopped{what: fmt.Sprintf("batch %d of %d of %s", n, total, jobLabel(job))}
			}
			return false, fmt.Errorf("backfill %s, batch %d of %d: %w (the batches before it are kept; the next rwc apply resumes here)", job.Path, n, total, res.Err)
		}
		if progress != nil {
			progress(BatchProgress{Job: job, Batch: n, Total: total, Result: res})
		}
	}
	_, err = r.db.ExecContext(ctx, `UPDATE rwc.backfills SET finished_at = clock_timestamp() WHERE path = $1 AND finished_at IS NULL`, job.Path)
	return true, err
}

// RefreshBatched runs an override (rwc refresh --where) in batches of days
// along the partition column, each its own transaction, and calls each with
// every batch's result, failed or not; a failure stops it. The batches
// before stay committed, so running it again is safe (with no ledger, it
// starts again at the first batch). On a protected flow the loss of all the
// batches is counted before the first runs. name names it as a job.
func (r *Runner) RefreshBatched(ctx context.Context, req Request, days int, name string, each func(BatchProgress)) error {
	job := &BackfillJob{Path: name, Flow: req.Flow, Where: req.Where, BatchDays: days, KeepWindow: true}
	batches, err := r.planBatches(job)
	if err != nil {
		return err
	}
	if !req.AllowLoss {
		if err := r.checkOverrideLoss(ctx, req.Flow, batches); err != nil {
			return err
		}
	}
	for i, b := range batches {
		p, issues := req.Flow.CompilePredicate(b)
		if len(issues) > 0 {
			return fmt.Errorf("batch %d: %s", i+1, issues[0].Message)
		}
		res := r.Refresh(ctx, Request{Flow: req.Flow, Mode: Override, Where: p, AllowLoss: req.AllowLoss})
		each(BatchProgress{Job: job, Batch: i + 1, Total: len(batches), Result: res})
		if res.Err != nil && ctx.Err() != nil {
			return res.Err // interrupted: the caller says what was committed
		}
		if res.Err != nil {
			return fmt.Errorf("batch %d of %d failed; the batches before it are committed", i+1, len(batches))
		}
	}
	return nil
}

// errBatchTaken rolls back a batch that another rwc apply committed while
// this one waited for the flow's lock. A Refusal: not logged as a failure.
var errBatchTaken = &Refusal{"the batch was committed by another rwc apply"}

// planBatches splits a backfill into its batches as CEL predicates.
func (r *Runner) planBatches(job *BackfillJob) ([]string, error) {
	days := job.BatchDays
	if days == 0 {
		days = DefaultBatchDays
	}
	where, err := job.Where.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone})
	if err != nil {
		return nil, err
	}
	window, err := job.Flow.Predicate.Resolve(predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone})
	if err != nil {
		return nil, err
	}
	if job.KeepWindow {
		window = nil
	}
	return job.Flow.Batches(where, window, days), nil
}

func (r *Runner) startBackfill(ctx context.Context, job *BackfillJob) error {
	batches, err := r.planBatches(job)
	if err != nil {
		return err
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Two applies starting it at once: the first one's batches stand.
	started, err := tx.ExecContext(ctx, `INSERT INTO rwc.backfills (path, content_hash, flow, reason, commit) VALUES ($1, $2, $3, $4, NULLIF($5, ''))
		ON CONFLICT (path) DO NOTHING`, job.Path, job.Hash(), job.Flow.Name(), job.Reason, job.Commit)
	if err != nil {
		return err
	}
	if n, err := started.RowsAffected(); err != nil || n == 0 {
		return err
	}
	for i, b := range batches {
		if _, err := tx.ExecContext(ctx, `INSERT INTO rwc.backfill_batches (path, batch, predicate_cel) VALUES ($1, $2, $3)`, job.Path, i+1, b); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type batch struct {
	n   int
	cel string
}

func (r *Runner) pendingBatches(ctx context.Context, job *BackfillJob) ([]batch, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT batch, predicate_cel FROM rwc.backfill_batches WHERE path = $1 AND committed_at IS NULL ORDER BY batch`, job.Path)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []batch
	for rows.Next() {
		var b batch
		if err := rows.Scan(&b.n, &b.cel); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func (r *Runner) batchCount(ctx context.Context, path string) (int, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM rwc.backfill_batches WHERE path = $1`, path).Scan(&n)
	return n, err
}

// LedgerEntry is one backfill in the ledger, for status.
type LedgerEntry struct {
	Path         string     `json:"path"`
	Flow         string     `json:"flow"`
	Reason       string     `json:"reason"`
	Commit       string     `json:"commit,omitempty"`
	Batches      int        `json:"batches"`
	BatchesDone  int        `json:"batches_done"`
	RowsDeleted  int64      `json:"rows_deleted"`
	RowsInserted int64      `json:"rows_inserted"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
}

// Ledger lists every backfill rwc has started, oldest first.
func Ledger(ctx context.Context, db *sql.DB) (_ []LedgerEntry, err error) {
	defer func() { err = lockTimeout(ctx, db, "the backfill ledger", stateRels, 0, "nothing was read", err) }()
	rows, err := db.QueryContext(ctx, `SELECT b.path, b.flow, b.reason, coalesce(b.commit, ''), count(x.batch), count(x.committed_at),
			b.rows_deleted, b.rows_inserted, b.started_at, b.finished_at
		FROM rwc.backfills b LEFT JOIN rwc.backfill_batches x ON x.path = b.path
		GROUP BY b.path ORDER BY b.started_at, b.path`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LedgerEntry
	for rows.Next() {
		var e LedgerEntry
		var fin sql.NullTime
		if err := rows.Scan(&e.Path, &e.Flow, &e.Reason, &e.Commit, &e.Batches, &e.BatchesDone, &e.RowsDeleted, &e.RowsInserted, &e.StartedAt, &fin); err != nil {
			return nil, err
		}
		e.StartedAt = e.StartedAt.UTC()
		if fin.Valid {
			t := fin.Time.UTC()
			e.FinishedAt = &t
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// BackfillJobs turns the project's backfill files into the jobs rwc apply
// runs, in file order, each under its ledger key (LedgerKey).
func BackfillJobs(p *compile.Project, dir, commit string) []*BackfillJob {
	var jobs []*BackfillJob
	present := presentKeys(p, dir)
	for _, b := range p.Backfills {
		jobs = append(jobs, &BackfillJob{Path: LedgerKey(dir, b.File.File), Content: strings.Join(p.Spec.Sources[b.File.File], "\n"),
			Flow: b.Flow, Where: b.Predicate, Reason: b.File.Reason, BatchDays: b.File.BatchDays, Commit: commit, Present: present, AllowLoss: b.File.AllowLoss})
	}
	return jobs
}

// presentKeys are the ledger keys of the project's backfill files.
func presentKeys(p *compile.Project, dir string) []string {
	var keys []string
	for _, b := range p.Backfills {
		keys = append(keys, LedgerKey(dir, b.File.File))
	}
	return keys
}

// LedgerKey names a backfill file in the ledger the same way however the
// spec directory was named on the command line (pipelines, ./pipelines, an
// absolute path, "." from inside it): the directory's own name and the path
// inside it, e.g. pipelines/backfills/x.yaml. Keyed by the path as given, a
// file applied by `rwc apply` would run again under `rwc apply $PWD/pipelines`.
func LedgerKey(dir, file string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return file
	}
	rel, err := filepath.Rel(dir, file)
	if err != nil || strings.HasPrefix(rel, "..") {
		return file
	}
	return filepath.ToSlash(filepath.Join(filepath.Base(abs), rel))
}

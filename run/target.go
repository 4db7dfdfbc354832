package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lib/pq"
	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/session"
)

// The target's life before a refresh writes it: adopted only if rwc made
// it, created on first use, its columns changed first, on their own.

// adoptable refuses a target the refresh must not write, and adopts one
// Citus rebuilt once its rows say it is rwc's (compile.Flow.TargetVerdict).
func adoptable(ctx context.Context, tx *sql.Tx, f *compile.Flow, st *compile.FlowState, obs compile.Observation, changes []compile.ColumnChange, log io.Writer) error {
	a := f.TargetVerdict(*st, obs, changes)
	switch {
	case a.Refusal != "":
		return refuse("%s", a.Refusal)
	case a.Adopt:
		return adoptRecreated(ctx, tx, f, st, obs, log)
	}
	return nil
}

// ensureTarget creates the target on first use (oid 0), or asks for its
// column changes to commit first (columnsFirst).
func (r *Runner) ensureTarget(ctx context.Context, tx *sql.Tx, f *compile.Flow, s compile.Statements, changes []compile.ColumnChange, oid uint32, citus bool) error {
	switch {
	case oid != 0 && len(changes) > 0:
		if err := r.refuseDestructive(f, changes); err != nil {
			return err
		}
		return &columnsFirst{}
	case oid != 0:
		return nil
	}
	if err := r.ensureSchema(ctx, tx, s, citus); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.CreateTable); err != nil {
		return err
	}
	// Distributed first, as the plan shows it: Citus builds the indexes
	// shard by shard.
	if s.Distribute != "" {
		if _, err := tx.ExecContext(ctx, s.Distribute); err != nil {
			return distributeError(f, err)
		}
	}
	for _, stmt := range s.CreateIndexes {
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

// afterFirst is a refresh that failed after what it committed first
// (committedFirst): its target's column changes, its partitions. Those
// stay, whatever the refresh's own error says.
type afterFirst struct {
	err        error
	changes    []compile.ColumnChange
	partitions bool
}

// Error is the refresh's error, saying what stays: in place of its
// "unchanged", which is not always its last words (an expectations
// failure lists the failures after it).
func (e *afterFirst) Error() string {
	msg := e.err.Error()
	if strings.Contains(msg, unchanged) {
		return strings.Replace(msg, unchanged, e.rolledBack(), 1)
	}
	return msg + "; " + e.rolledBack()
}

func (e *afterFirst) Unwrap() error { return e.err }

// rolledBack says what a failed refresh left: the target's rows as they
// were, and what it committed before.
func (e *afterFirst) rolledBack() string {
	var stay []string
	if len(e.changes) > 0 {
		var names []string
		for _, c := range e.changes {
			names = append(names, c.Change())
		}
		stay = append(stay, fmt.Sprintf("the target's column changes (%s)", strings.Join(names, ", ")))
	}
	if e.partitions {
		stay = append(stay, "the partitions it made (empty)")
	}
	msg := "the refresh was rolled back; " + strings.Join(stay, " and ") + ", committed before it, stay"
	if len(e.changes) > 0 {
		msg += ", and the next refresh recomputes the window"
	}
	return msg
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
	var changes []compile.ColumnChange
	err := r.inAttempts(ctx, func(wait time.Duration) error {
		var err error
		changes, err = r.evolveOnce(ctx, conn, f, wait)
		return err
	})
	if err != nil {
		return nil, err
	}
	return changes, nil
}

// inAttempts runs once, DDL that waits at most its argument for its locks,
// again after each lock timeout (ddlAttempt), until --lock-timeout has
// passed.
func (r *Runner) inAttempts(ctx context.Context, once func(wait time.Duration) error) error {
	deadline := time.Now().Add(r.opts.LockTimeout)
	for {
		attempt := min(ddlAttempt, time.Until(deadline))
		err := once(max(attempt, time.Millisecond))
		if !isLockTimeout(err) || attempt < ddlAttempt {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(ddlPause):
		}
	}
}

// ddlAttempt bounds each attempt of evolveAlone and premakeAlone to take
// its lock, and ddlPause is the rest between two. While an ALTER TABLE
// waits for ACCESS EXCLUSIVE (behind a session holding any lock on the
// target, a long report, an idle transaction), every reader that comes
// after it queues behind it: attempts that give up soon let that queue
// through, and they go on until --lock-timeout has passed, as one long
// wait would.
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
// ensureSchema creates the target's schema when it is missing; on Citus,
// citusSchemaFirst did, before the refresh's transaction.
func (r *Runner) ensureSchema(ctx context.Context, tx *sql.Tx, s compile.Statements, citus bool) error {
	if citus {
		return nil
	}
	return createSchema(ctx, tx, s.CreateSchema)
}

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

package run

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// probeTargetAside starts the target's fingerprint on a second connection,
// in the refresh transaction's own snapshot (exported and imported), while
// the refresh's connection probes the sources: the scans are independent,
// each is single-threaded, and a refresh that is likely incremental pays
// for the longer of the two instead of both. The returned function waits
// for the result; it must be called (the refresh defers it) so that no
// probe outlives its refresh.
func (r *Runner) probeTargetAside(ctx context.Context, tx *sql.Tx, f *compile.Flow, window *predicate.Predicate) func() ([]fingerprintRow, error) {
	var snapshot string
	if err := tx.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return func() ([]fingerprintRow, error) { return nil, err }
	}
	type result struct {
		rows []fingerprintRow
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		rows, err := r.probeInSnapshot(ctx, snapshot, f, window)
		ch <- result{rows, err}
	}()
	var res *result
	return func() ([]fingerprintRow, error) {
		if res == nil {
			got := <-ch
			res = &got
		}
		return res.rows, res.err
	}
}

func (r *Runner) probeInSnapshot(ctx context.Context, snapshot string, f *compile.Flow, window *predicate.Predicate) ([]fingerprintRow, error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// SET TRANSACTION SNAPSHOT must come before the transaction's first
	// query; the settings match the refresh's (DateStyle: values are read
	// back as text).
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET TRANSACTION SNAPSHOT '%s'; SET LOCAL DateStyle = ISO; SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d",
		snapshot, r.opts.LockTimeout.Milliseconds(), r.opts.StatementTimeout.Milliseconds())); err != nil {
		return nil, err
	}
	return probeTarget(ctx, tx, f, window)
}

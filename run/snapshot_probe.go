package run

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// asideConnWait is how long a refresh waits for a second connection for
// its target probe before it probes on its own connection instead (a role
// limited to one connection, a full server, a small pool).
const asideConnWait = 2 * time.Second

// probeTargetAside starts the target's fingerprint on a second connection,
// in the refresh transaction's own snapshot (exported and imported), while
// the refresh's connection probes the sources: the scans are independent,
// each is single-threaded, and a refresh that is likely incremental pays
// for the longer of the two instead of both. The snapshot hides the
// refresh's own writes, so it must start before any (the incremental path
// writes nothing before its probes). result waits for the fingerprint;
// stop cancels a probe not waited for and waits for it to end, so that
// none outlives its refresh.
func (r *Runner) probeTargetAside(ctx context.Context, tx *sql.Tx, f *compile.Flow, window *predicate.Predicate) (result func() ([]fingerprintRow, error), stop func(), err error) {
	connCtx, cancelConn := context.WithTimeout(ctx, asideConnWait)
	conn, connErr := r.db.Conn(connCtx)
	cancelConn()
	if connErr != nil {
		// No second connection: the same probe, later, on this one.
		return func() ([]fingerprintRow, error) { return probeTarget(ctx, tx, f, window) }, func() {}, nil
	}
	var snapshot string
	if err := tx.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		conn.Close()
		return nil, nil, err
	}
	type outcome struct {
		rows []fingerprintRow
		err  error
	}
	probeCtx, cancel := context.WithCancel(ctx)
	ch := make(chan outcome, 1)
	go func() {
		defer conn.Close()
		rows, err := r.probeInSnapshot(probeCtx, conn, snapshot, f, window)
		ch <- outcome{rows, err}
	}()
	var got *outcome
	result = func() ([]fingerprintRow, error) {
		if got == nil {
			o := <-ch
			got = &o
		}
		return got.rows, got.err
	}
	stop = func() {
		cancel()
		_, _ = result()
	}
	return result, stop, nil
}

func (r *Runner) probeInSnapshot(ctx context.Context, conn *sql.Conn, snapshot string, f *compile.Flow, window *predicate.Predicate) ([]fingerprintRow, error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
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

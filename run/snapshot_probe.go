package run

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// asideConnWait is how long a refresh waits for a second connection for
// its target probe before it probes on its own connection instead (a role
// limited to one connection, a full server, a small pool).
const asideConnWait = 2 * time.Second

// aside runs probe on a second connection, in the refresh transaction's
// own snapshot (exported and imported), while the refresh's connection goes
// on: probes are single-threaded scans, and two run on two cores. The
// target's probe runs beside the sources'; the sources' beside the write
// when only their storage waits for them. The snapshot hides the refresh's
// own writes, so it must be taken before any that the probe could see (the
// refresh writes only its target, and the target's probe starts first).
// result waits for the rows; stop cancels a probe not waited for and waits
// for it to end, so that none outlives its refresh. Without a second
// connection within asideConnWait, result runs the probe on tx instead.
func (r *Runner) aside(ctx context.Context, tx *sql.Tx, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) (result func() ([]fingerprintRow, error), stop func(), err error) {
	connCtx, cancelConn := context.WithTimeout(ctx, asideConnWait)
	conn, connErr := r.db.Conn(connCtx)
	cancelConn()
	if connErr != nil {
		return func() ([]fingerprintRow, error) { return probe(ctx, tx) }, func() {}, nil
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
		rows, err := r.inSnapshot(probeCtx, conn, snapshot, probe)
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

func (r *Runner) inSnapshot(ctx context.Context, conn *sql.Conn, snapshot string, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) ([]fingerprintRow, error) {
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
	return probe(ctx, tx)
}

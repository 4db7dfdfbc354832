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
// connection within asideConnWait, the probe runs on tx at once instead.
func (r *Runner) aside(ctx context.Context, tx *sql.Tx, conns *spareConns, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) (result func() ([]fingerprintRow, error), stop func(), err error) {
	conn := conns.take(ctx)
	if conn == nil {
		// On the refresh's own connection the probe runs now, before the
		// write: later it would see the refresh's own writes.
		rows, err := probe(ctx, tx)
		return func() ([]fingerprintRow, error) { return rows, err }, func() {}, nil
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

// spareConns are the connections a refresh's aside probes use. The first
// is opened in the background as soon as the refresh holds its own:
// opening a session takes a few milliseconds, which then overlap the
// refresh's first statements instead of delaying its target's probe. Any
// further one (the sources' probe beside a whole-window write) is opened
// when asked for. One in advance, not more: with the lock's connection that
// is two, what database/sql keeps idle by default, so a run of refreshes
// reuses its sessions rather than opening new ones each time.
type spareConns struct {
	db     *sql.DB
	ch     chan *sql.Conn // nil for a connection that could not be had
	ready  bool           // the one opened in advance is not taken yet
	cancel context.CancelFunc
}

func (r *Runner) spares(ctx context.Context) *spareConns {
	ctx, cancel := context.WithCancel(ctx)
	sc := &spareConns{db: r.db, ch: make(chan *sql.Conn, 1), ready: true, cancel: cancel}
	go func() {
		c, err := r.db.Conn(ctx)
		if err != nil {
			c = nil
		}
		sc.ch <- c
	}()
	return sc
}

// take is a connection for a probe, or nil when none is to be had within
// asideConnWait (a role limited to one connection, a full server, a small
// pool): the probe then runs on the refresh's own.
func (sc *spareConns) take(ctx context.Context) *sql.Conn {
	if sc == nil {
		return nil
	}
	if sc.ready {
		sc.ready = false
		select {
		case c := <-sc.ch:
			return c
		case <-time.After(asideConnWait):
			sc.cancel() // release takes care of a late one
			sc.ready = true
			return nil
		case <-ctx.Done():
			sc.ready = true
			return nil
		}
	}
	connCtx, cancel := context.WithTimeout(ctx, asideConnWait)
	defer cancel()
	c, err := sc.db.Conn(connCtx)
	if err != nil {
		return nil
	}
	return c
}

// release gives back the connection opened in advance if no probe took
// it, waiting for it (its opening is cancelled) when it is still coming.
// It may be called again.
func (sc *spareConns) release() {
	if sc == nil {
		return
	}
	sc.cancel()
	if sc.ready {
		sc.ready = false
		if c := <-sc.ch; c != nil {
			c.Close()
		}
	}
}

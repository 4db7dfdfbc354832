package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
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
// when only their storage waits for them. The imported snapshot hides the
// refresh's own writes, whenever they are made. Without a second
// connection within asideConnWait, the probe runs on tx at once instead,
// before any write (later it would see the refresh's own writes).
//
// The probe's transaction first takes ACCESS SHARE locks on tables. A
// refresh that waits for an aside probe while its own transaction holds
// locks is a wait PostgreSQL cannot see: should the probe queue for a lock
// behind someone's ACCESS EXCLUSIVE request (an ALTER TABLE, a TRUNCATE)
// that itself waits for the refresh, nothing would move until
// lock_timeout. A probe that holds its locks before the refresh locks what
// such a request could wait for cannot end up in that queue (hasLocks,
// waitLocks).
func (r *Runner) aside(ctx context.Context, tx *sql.Tx, conns *spareConns, tables []string, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) (*asideProbe, error) {
	a := &asideProbe{locked: make(chan struct{}), done: make(chan struct{}), cancel: func() {}}
	conn := conns.take(ctx)
	if conn == nil {
		a.rows, a.err = probe(ctx, tx)
		close(a.locked)
		close(a.done)
		return a, nil
	}
	var snapshot string
	if err := tx.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		conn.Close()
		return nil, err
	}
	probeCtx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go func() {
		defer close(a.done)
		defer conn.Close()
		a.rows, a.err = r.inSnapshot(probeCtx, conn, snapshot, tables, a.locked, probe)
	}()
	return a, nil
}

// asideLazily is aside for a probe whose answer is wanted only late, and
// may then be had here instead (besideOrHere): it takes its connection in
// the background, so that a refresh with none spare does not wait for one
// to open; when none is to be had, it ends without its locks, and the
// caller runs the probe itself.
func (r *Runner) asideLazily(ctx context.Context, tx *sql.Tx, conns *spareConns, tables []string, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) (*asideProbe, error) {
	if conns == nil {
		return r.aside(ctx, tx, nil, tables, probe)
	}
	var snapshot string
	if err := tx.QueryRowContext(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, err
	}
	probeCtx, cancel := context.WithCancel(ctx)
	a := &asideProbe{locked: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(a.done)
		conn := conns.take(probeCtx)
		if conn == nil {
			return // a.locked stays open: not probed
		}
		defer conn.Close()
		a.rows, a.err = r.inSnapshot(probeCtx, conn, snapshot, tables, a.locked, probe)
	}()
	return a, nil
}

// asideProbe is a probe aside runs. Its methods accept nil: no probe, no
// rows.
type asideProbe struct {
	locked chan struct{} // closed once its transaction holds its locks, or it ended
	done   chan struct{}
	rows   []fingerprintRow
	err    error
	cancel context.CancelFunc
}

// readyProbe is a probe whose rows are known without probing.
func readyProbe(rows []fingerprintRow) *asideProbe {
	a := &asideProbe{locked: make(chan struct{}), done: make(chan struct{}), cancel: func() {}, rows: rows}
	close(a.locked)
	close(a.done)
	return a
}

// result waits for the probe's rows.
func (a *asideProbe) result() ([]fingerprintRow, error) {
	if a == nil {
		return nil, nil
	}
	<-a.done
	return a.rows, a.err
}

// waitLocks waits until the probe holds its locks (or has ended).
func (a *asideProbe) waitLocks() {
	if a != nil {
		<-a.locked
	}
}

// hasLocks reports whether the probe holds its locks (or has ended).
func (a *asideProbe) hasLocks() bool {
	if a == nil {
		return true
	}
	select {
	case <-a.locked:
		return true
	default:
		return false
	}
}

// stop cancels a probe not waited for and waits for it to end, so that
// none outlives its refresh.
func (a *asideProbe) stop() {
	if a != nil {
		a.cancel()
		<-a.done
	}
}

func (r *Runner) inSnapshot(ctx context.Context, conn *sql.Conn, snapshot string, tables []string, locked chan struct{}, probe func(context.Context, *sql.Tx) ([]fingerprintRow, error)) ([]fingerprintRow, error) {
	signalled := false
	defer func() {
		if !signalled {
			close(locked)
		}
	}()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// SET TRANSACTION SNAPSHOT must come before the transaction's first
	// query; the settings match the refresh's (DateStyle: values are read
	// back as text; jit off, see begin); the locks come in the same round trip.
	stmt := fmt.Sprintf("SET TRANSACTION SNAPSHOT '%s'; SET LOCAL DateStyle = ISO; SET LOCAL jit = off; SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d",
		snapshot, r.opts.LockTimeout.Milliseconds(), r.opts.StatementTimeout.Milliseconds())
	if len(tables) > 0 {
		stmt += "; LOCK TABLE " + strings.Join(tables, ", ") + " IN ACCESS SHARE MODE"
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return nil, err
	}
	signalled = true
	close(locked)
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
	mu     sync.Mutex     // probes aside lazily take theirs from goroutines of their own
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
	sc.mu.Lock()
	if sc.ready {
		defer sc.mu.Unlock()
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
	sc.mu.Unlock()
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
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ready {
		sc.ready = false
		if c := <-sc.ch; c != nil {
			c.Close()
		}
	}
}

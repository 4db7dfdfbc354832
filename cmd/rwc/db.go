package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/session"
)

// connect opens the database rwc works on: --dsn, else $RWC_DATABASE_URL,
// else the local PostgreSQL under .rwc/, started on first use (and said so
// on stderr) — except in CI or with RWC_DATABASE_URL set but empty, where
// that fallback is refused (run.ChooseDatabase). The state schema is
// created or upgraded.
func (g *globals) connect(ctx context.Context) (*sql.DB, error) {
	d, err := g.dialed(ctx)
	if err != nil {
		return nil, err
	}
	state := d.state
	if !d.stateRead {
		state = run.ReadState(ctx, d.db)
	}
	if err := state.Migrate(ctx, d.db); err != nil {
		d.db.Close()
		var pe *pq.Error
		if errors.As(err, &pe) {
			return nil, errors.New(run.StateProblem(err))
		}
		return nil, err
	}
	return d.db, nil
}

// connectOnly is connect without the state schema: rwc state check and
// repair work on a state Migrate refuses.
func (g *globals) connectOnly(ctx context.Context) (*sql.DB, error) {
	d, err := g.dialed(ctx)
	if err != nil {
		return nil, err
	}
	return d.db, nil
}

// dialed is the early dial (dialEarly), else a new one, once it is done.
func (g *globals) dialed(ctx context.Context) (*dial, error) {
	var d *dial
	if g.early != nil {
		d, g.early = g.early, nil
	} else {
		dsn, err := g.resolveDSN(ctx, true)
		if err != nil {
			return nil, err
		}
		d = startDial(ctx, dsn, g.dsnSource(dsn), g.lockTimeout, false)
	}
	<-d.done
	if d.err != nil {
		return nil, d.err
	}
	return d, nil
}

// dial is a connection being opened and checked and, when startDial is
// asked to, what Migrate reads first (run.ReadState, which changes
// nothing).
type dial struct {
	done      chan struct{}
	db        *sql.DB
	err       error
	state     run.StateRead
	stateRead bool
}

func startDial(ctx context.Context, dsn, source string, lockTimeout time.Duration, readState bool) *dial {
	d := &dial{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.db, d.err = open(ctx, dsn, source, lockTimeout)
		if d.err == nil && readState {
			d.state, d.stateRead = run.ReadState(ctx, d.db), true
		}
	}()
	return d
}

// open connects to dsn, from source (g.dsnSource), and checks that the
// server answers. Every session
// starts with lock_timeout = lockTimeout (0: run.DefaultLockTimeout), so
// that no statement rwc sends waits for a lock longer, whatever it is and
// whichever session it runs in: the state's migration, a flow's advisory
// lock, the type check, probes, VACUUM, the deployment's record, plan's
// EXPLAIN.
func open(ctx context.Context, dsn, source string, lockTimeout time.Duration) (*sql.DB, error) {
	if err := run.CheckDSN(source, dsn); err != nil {
		return nil, err
	}
	if lockTimeout <= 0 {
		lockTimeout = run.DefaultLockTimeout
	}
	db, err := session.Open(dsn, session.LockTimeout(lockTimeout))
	if err != nil {
		return nil, fmt.Errorf("database %s: %v", run.Redact(dsn), redactErr(err, dsn))
	}
	connectCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// Opening the first session is the check: it runs a query of its own
	// (session.Verify), so a ping after it would be a round trip more.
	conn, err := db.Conn(connectCtx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to %s (%s): %s", run.Redact(dsn), source, run.RedactText(run.ConnectProblem(err), dsn))
	}
	conn.Close() // back to the pool, for the command's first statement
	return db, nil
}

// dialEarly starts connecting while the specs load, when the database is
// named (--dsn or $RWC_DATABASE_URL): a session takes a few milliseconds to
// open, and the check of the state schema a few more (its catalog query is
// the session's first). Only what changes nothing: creating or upgrading
// the state waits for connect, so specs with errors still change nothing.
// (The local PostgreSQL is not started early either.) The returned func
// closes a connection connect did not take.
func (g *globals) dialEarly(ctx context.Context) func() {
	dsn := g.namedDSN()
	if dsn == "" {
		return func() {}
	}
	g.early = startDial(ctx, dsn, g.dsnSource(dsn), g.lockTimeout, true)
	return func() {
		if d := g.early; d != nil {
			g.early = nil
			<-d.done
			if d.db != nil {
				d.db.Close()
			}
		}
	}
}

// namedDSN is the database named by --dsn, else $RWC_DATABASE_URL; "":
// the local default.
func (g *globals) namedDSN() string {
	dsn, _ := run.ChooseDatabase(g.dsn, os.LookupEnv, false) // a refusal is connect's to say
	return dsn
}

// dsnSource names where dsn came from, for a message about it: --dsn,
// $RWC_DATABASE_URL (when both are set to the same string, either name is
// right), the PG* variables that named the server (run.Source), or the
// local PostgreSQL.
func (g *globals) dsnSource(dsn string) string {
	if chosen, _ := run.ChooseDatabase(g.dsn, os.LookupEnv, false); chosen != "" && chosen == dsn {
		if url := os.Getenv("RWC_DATABASE_URL"); url == dsn {
			return "RWC_DATABASE_URL"
		}
		return run.Source(g.dsn, os.LookupEnv)
	}
	return "the local PostgreSQL under " + run.LocalDir
}

// resolveDSN is the database to work on (run.ChooseDatabase): the one
// named, else the local PostgreSQL, started when start (rwc plan passes
// false: "" when it is not running).
func (g *globals) resolveDSN(ctx context.Context, start bool) (string, error) {
	dsn, err := run.ChooseDatabase(g.dsn, os.LookupEnv, !start)
	if err != nil || dsn != "" {
		return dsn, err
	}
	if !start && !run.LocalExists(".") {
		// OpenLocal would initdb a cluster just to find it stopped.
		return "", nil
	}
	l, err := run.OpenLocal(".", g.stderr)
	if err != nil {
		return "", fmt.Errorf("no --dsn, RWC_DATABASE_URL or PG* variables naming a server (PGHOST, PGDATABASE, PGSERVICE, ...), and the local PostgreSQL cannot be used: %v", err)
	}
	if !l.Running() {
		if !start {
			return "", nil
		}
		fmt.Fprintf(g.stderr, "rwc: no --dsn, RWC_DATABASE_URL or PG* variables naming a server: starting the local PostgreSQL under %s (stop it with rwc local stop)\n", run.LocalDir)
	}
	if err := l.Start(ctx); err != nil {
		return "", err
	}
	return l.URL(), nil
}

// redactErr keeps a driver error from repeating the password.
func redactErr(err error, dsn string) string {
	return run.RedactText(err.Error(), dsn)
}

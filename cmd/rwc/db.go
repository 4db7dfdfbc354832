package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	_ "github.com/lib/pq"

	"github.com/rwc-dev/rwc/run"
)

// connect opens the database rwc works on: --dsn, else $RWC_DATABASE_URL,
// else the local PostgreSQL under .rwc/, started on first use (and said so
// on stderr). The state schema is created or upgraded.
func (g *globals) connect(ctx context.Context) (*sql.DB, error) {
	dsn, err := g.resolveDSN(ctx, true)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("database %s: %v", run.Redact(dsn), redactErr(err, dsn))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to %s: %v", run.Redact(dsn), redactErr(err, dsn))
	}
	if err := run.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (g *globals) resolveDSN(ctx context.Context, start bool) (string, error) {
	if g.dsn != "" {
		return g.dsn, nil
	}
	if env := os.Getenv("RWC_DATABASE_URL"); env != "" {
		return env, nil
	}
	if !start && !run.LocalExists(".") {
		// OpenLocal would initdb a cluster just to find it stopped.
		return "", nil
	}
	l, err := run.OpenLocal(".", os.Stderr)
	if err != nil {
		return "", fmt.Errorf("no --dsn or RWC_DATABASE_URL, and the local PostgreSQL cannot be used: %v", err)
	}
	if !l.Running() {
		if !start {
			return "", nil
		}
		fmt.Fprintf(os.Stderr, "rwc: no --dsn or RWC_DATABASE_URL: starting the local PostgreSQL under %s (stop it with rwc local stop)\n", run.LocalDir)
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

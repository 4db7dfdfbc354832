package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
	"github.com/rwc-dev/rwc/run/session"
)

// Server starts a PostgreSQL of the test's own, with further
// postgresql.conf lines, for a test that needs server settings the shared
// cluster must not have (e.g. an eager autovacuum, which would take locks
// in every other test's tables), and returns a handle on its postgres
// database and its DSN. It is stopped and deleted when the test ends, or
// reaped with the shared cluster's directory (reapStale).
func Server(t testing.TB, settings ...string) (*sql.DB, string) {
	t.Helper()
	if !inMain.Load() {
		t.Fatal("pgtest.Server needs TestMain to call pgtest.Main")
	}
	once.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL unavailable: %v", startErr)
	}
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, fmt.Sprintf("own-%d", seq.Add(1))), Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dsn := c.DSN("postgres")
	db, err := session.Open(dsn)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

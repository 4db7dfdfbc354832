// Package pgtest gives tests a fresh PostgreSQL database each, from one
// throwaway cluster per test binary.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		db, dsn := pgtest.DB(t)
//		...
//	}
//
// The cluster starts on the first DB call (binaries that never ask pay
// nothing) and is stopped and deleted when Main returns. If PostgreSQL
// cannot be started the test fails with the reason; tests are never skipped
// silently. Set RWC_SKIP_PG=1 to explicitly skip every test that calls DB
// (e.g. on a machine without PostgreSQL).
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
	"github.com/rwc-dev/rwc/run/session"
)

const dirPrefix = "rwc-pgtest-"

var (
	inMain   atomic.Bool
	once     sync.Once
	tmp      string // this binary's temp dir, holding owner.pid and data/
	cluster  *pgcluster.Cluster
	startErr error // why the cluster is unavailable
	seq      atomic.Int64
)

// Main runs the tests and then stops and deletes the cluster if one was
// started. Use it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	inMain.Store(true)
	reapStale()
	code := m.Run()
	if err := stopCitus(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		code = 1
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			code = 1
		}
	}
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	return code
}

func start() {
	if tmp, startErr = os.MkdirTemp("", dirPrefix); startErr != nil {
		return
	}
	// owner.pid lets a later run reap this cluster if we die without
	// reaching the end of Main (test timeout panic, SIGKILL).
	if startErr = os.WriteFile(filepath.Join(tmp, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); startErr != nil {
		return
	}
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, "data"),
		// A subscription between two test databases; PREPARE TRANSACTION.
		Settings: []string{"wal_level = logical", "max_prepared_transactions = 8"}})
	if err != nil {
		startErr = err
		return
	}
	cluster = c // set before Start so Main stops a half-started server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startErr = c.Start(ctx)
}

// reapStale stops and deletes clusters left behind by test binaries that
// died before Main could clean up.
func reapStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue // not ours, or its owner is still setting it up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		nodes, _ := filepath.Glob(filepath.Join(d, "citus*"))
		own, _ := filepath.Glob(filepath.Join(d, "own-*"))
		nodes = append(nodes, own...)
		for _, data := range append(nodes, filepath.Join(d, "data")) {
			if pgcluster.Initialized(data) {
				if c, err := pgcluster.Open(pgcluster.Options{DataDir: data}); err == nil {
					c.Stop()
				}
			}
		}
		os.RemoveAll(d)
	}
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// DB creates a database for this test and returns an open handle on it and
// its DSN. The handle is closed and the database dropped when the test ends.
func DB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	if !inMain.Load() {
		t.Fatal("pgtest.DB needs TestMain to call pgtest.Main, which tears the cluster down")
	}
	once.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL unavailable (set RWC_SKIP_PG=1 to skip such tests): %v", startErr)
	}
	// The test name helps when reading server logs; the number makes it unique.
	name := fmt.Sprintf("t%d_%s", seq.Add(1), unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	if len(name) > 63 { // PostgreSQL truncates identifiers to 63 bytes
		name = name[:63]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	dsn := cluster.DSN(name)
	db, err := session.Open(dsn)
	if err == nil {
		err = db.PingContext(ctx)
	}
	t.Cleanup(func() {
		if db != nil {
			db.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.DropDatabase(ctx, name); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", dsn, err)
	}
	return db, dsn
}

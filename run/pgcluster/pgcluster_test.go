package pgcluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newCluster opens a cluster in dir and stops it when the test ends.
func newCluster(t *testing.T, dir string) *Cluster {
	t.Helper()
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1")
	}
	c, err := Open(Options{DataDir: dir, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// longDir is a fresh data dir path longer than the 107-byte Unix socket
// limit, proving the server never puts a socket there.
func longDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), strings.Repeat("long-", 20), "pgdata")
}

func query(t *testing.T, dsn, q string) string {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s on %s: %v", q, dsn, err)
	}
	return s
}

func TestLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := longDir(t)
	c := newCluster(t, dir)
	if c.Running() {
		t.Fatal("running before Start")
	}
	for i := 0; i < 2; i++ { // the second Start must be a no-op
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if !c.Running() {
			t.Fatal("not running after Start")
		}
	}
	if err := c.CreateDatabase(ctx, "Some DB"); err != nil {
		t.Fatal(err)
	}
	if got := query(t, c.DSN("Some DB"), "SELECT current_database()"); got != "Some DB" {
		t.Fatalf("current_database = %q", got)
	}
	if got := query(t, c.DSN("postgres"), "SHOW fsync"); got != "off" {
		t.Errorf("fsync = %s, want off", got)
	}
	if got := query(t, c.DSN("postgres"), "SHOW server_encoding"); got != "UTF8" {
		t.Errorf("server_encoding = %s", got)
	}
	for i := 0; i < 2; i++ { // the second Stop must be a no-op
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if c.Running() {
			t.Fatal("running after Stop")
		}
	}

	// After a crash and reboot postmaster.pid may name a live process that
	// is not a postgres; Start must not be fooled by it.
	pidFile := filepath.Join(dir, "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}

	// A new handle on the same directory keeps the port and the data.
	c2 := newCluster(t, dir)
	if c2.Port() != c.Port() {
		t.Fatalf("port changed on reopen: %d -> %d", c.Port(), c2.Port())
	}
	if err := c2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.DropDatabase(ctx, "Some DB"); err != nil {
		t.Fatal(err)
	}
	if err := c2.DropDatabase(ctx, "Some DB"); err != nil { // IF EXISTS
		t.Fatal(err)
	}
}

// Two concurrent Open+Start on a fresh directory (as two `rwc local start`
// would do) must both succeed and agree on one server.
func TestConcurrentStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := longDir(t)
	var wg sync.WaitGroup
	cs := make([]*Cluster, 2)
	errs := make([]error, 2)
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = Open(Options{DataDir: dir})
			if errs[i] == nil {
				errs[i] = cs[i].Start(ctx)
			}
		}()
	}
	wg.Wait()
	for _, c := range cs {
		if c != nil {
			t.Cleanup(func() { c.Stop() })
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if cs[0].Port() != cs[1].Port() {
		t.Fatalf("ports differ: %d vs %d", cs[0].Port(), cs[1].Port())
	}
}

// A failing start reports the server log, not just pg_ctl's exit status.
func TestStartFailureShowsLog(t *testing.T) {
	c := newCluster(t, longDir(t))
	conf := filepath.Join(c.DataDir(), "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("shared_buffers = 'bogus'\n")
	f.Close()
	err = c.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "shared_buffers") {
		t.Fatalf("want error quoting the log about shared_buffers, got %v", err)
	}
	t.Log(err)
}

func TestBinDir(t *testing.T) {
	d, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !isExec(filepath.Join(d, "postgres")) {
		t.Errorf("%s has no postgres binary", d)
	}
}

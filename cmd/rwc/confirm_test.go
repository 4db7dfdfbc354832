package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
)

// TestRefreshFullAsks: rwc refresh --full deletes history, so on a
// terminal it says how many rows and asks; anything but y changes
// nothing, --yes skips the question, and without a terminal it refuses
// unless --yes. (In-process: the test stands in for the terminal.)
func TestRefreshFullAsks(t *testing.T) {
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	c := startCluster(t)
	dsn := newDatabase(t, c)
	t.Setenv("RWC_DATABASE_URL", dsn)
	t.Setenv("CI", "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pipelines/views.yaml"), `pipeline: views
schema: analytics
tables:
  page_views:
    replace_where: event_date >= date('2026-01-08')
    columns:
      event_date: date
      views: bigint
    query: SELECT event_date, count(*) AS views FROM events GROUP BY event_date
`)
	t.Chdir(dir)
	db := sqlDB(t, dsn)
	mustExec(t, db, `CREATE TABLE events (event_date date, page text)`)
	mustExec(t, db, `INSERT INTO events SELECT d::date, 'home' FROM generate_series(DATE '2026-01-01', DATE '2026-01-10', '1 day') d`)
	if code, _, stderr := rwcIn(t, "", "refresh", "page_views", "--where", "true", "--allow-dirty"); code != 0 {
		t.Fatalf("refresh --where: exit %d: %s", code, stderr)
	}
	count := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM analytics.page_views`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	terminal := true
	old := stdinTerminal
	stdinTerminal = func(io.Reader) bool { return terminal }
	t.Cleanup(func() { stdinTerminal = old })

	// Asked, and not confirmed: nothing changes.
	for _, answer := range []string{"n\n", "\n", "", "maybe\n"} {
		code, stdout, stderr := rwcIn(t, answer, "refresh", "page_views", "--full", "--allow-dirty")
		if code != 1 || stdout != "" {
			t.Errorf("answer %q: exit %d, stdout %q", answer, code, stdout)
		}
		for _, want := range []string{
			"rwc: refresh --full of page_views deletes every row of analytics.page_views and recomputes its window (event_date >= date('2026-01-08')): 7 rows outside it are lost for good\nGo ahead? [y/N] ",
			"rwc: not confirmed: nothing was changed (--yes goes ahead without asking)\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("answer %q: stderr %q lacks %q", answer, stderr, want)
			}
		}
		if n := count(); n != 10 {
			t.Fatalf("answer %q: %d rows, want 10 kept", answer, n)
		}
	}
	// Confirmed: it runs.
	if code, stdout, stderr := rwcIn(t, "y\n", "refresh", "page_views", "--full", "--allow-dirty"); code != 0 || !strings.Contains(stdout, "full_refresh") {
		t.Fatalf("answer y: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := count(); n != 3 {
		t.Fatalf("after --full: %d rows, want the window's 3", n)
	}
	// --yes: not asked.
	if code, _, stderr := rwcIn(t, "", "refresh", "page_views", "--full", "--yes", "--allow-dirty"); code != 0 || strings.Contains(stderr, "Go ahead") {
		t.Fatalf("--yes: exit %d, stderr %q", code, stderr)
	}
	// No terminal: refused before connecting, unless --yes.
	terminal = false
	code, stdout, stderr := rwcIn(t, "y\n", "refresh", "page_views", "--full", "--allow-dirty")
	if code != 1 || stdout != "" || stderr != "rwc: rwc refresh --full deletes every row of the target outside its window for good, and asks first; stdin is not a terminal, so nothing was changed: pass --yes to go ahead\n" {
		t.Errorf("no terminal: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := rwcIn(t, "", "refresh", "page_views", "--full", "-y", "--allow-dirty"); code != 0 {
		t.Fatalf("no terminal, -y: exit %d, stderr %q", code, stderr)
	}
}

// rwcIn runs rwc in-process with stdin and returns its exit status and
// output.
func rwcIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := execute(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// newDatabase creates a database of its own for the test on c.
func newDatabase(t *testing.T, c *pgcluster.Cluster) string {
	t.Helper()
	name := strings.ToLower(fmt.Sprintf("t_%s_%d", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), time.Now().UnixNano()%1e6))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	return c.DSN(name)
}

func sqlDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, stmt string, args ...any) {
	t.Helper()
	if _, err := db.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

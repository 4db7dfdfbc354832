package pgtest

import (
	"bytes"
	"database/sql"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Exec runs q and fails the test on an error.
func Exec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Rows returns q's rows, each as its row literal text, sorted in Go (the
// database's collation must not matter): an order-independent picture of a
// table or query result to compare.
func Rows(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rs, err := db.Query(fmt.Sprintf("SELECT x::text FROM (%s) x", q), args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	out := []string{}
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// Count returns the single integer q yields.
func Count(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// AdvisoryLocks counts the advisory locks held in db's database: a refresh
// that ended, however it ended, must hold none.
func AdvisoryLocks(t testing.TB, db *sql.DB) int64 {
	t.Helper()
	return Count(t, db, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND d.datname = current_database()`)
}

// SameRows fails the test when got and want (from Rows) differ.
func SameRows(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got  %d rows:\n  %s\n want %d rows:\n  %s", what, len(got), strings.Join(got, "\n  "),
			len(want), strings.Join(want, "\n  "))
	}
}

// BuildRWC builds the rwc command into path, for tests that need a real
// process to kill or to run twice at once.
func BuildRWC(path string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cmd := exec.Command(goTool, "build", "-o", path, "github.com/rwc-dev/rwc/cmd/rwc")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/rwc: %v\n%s", err, out.String())
	}
	return nil
}

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rwc-dev/rwc/run/pgcluster"
)

// TestPlanWithDatabase runs the scripts of testdata/plandb: saved plans,
// stale plans and plans from the deployed snapshot, with rwc (the real
// command, run as a subprocess by testscript) on a real PostgreSQL. Each
// script gets a fresh database in RWC_DATABASE_URL, and two commands:
//
//	commit MSG       stage everything in the current directory's git
//	                 repository (created there if it has none) and commit
//	                 it with go-git at a fixed time; $COMMIT is the hash
//	sql STMT         run STMT on the script's database; print the rows
//	                 of a query, one per line, columns tab-separated
//	exitcode N CMD…  exec CMD… (like exec) and require exit status N
//
// The cluster is started here rather than by pgtest, whose Main the
// package's TestMain (testscript's) does not call; its directory follows
// pgtest's convention so that a later pgtest run reaps it if this test
// binary dies without stopping it. RWC_SKIP_PG=1 skips the test.
func TestPlanWithDatabase(t *testing.T) {
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	cluster := startCluster(t)
	var seq atomic.Int64
	testscript.Run(t, testscript.Params{
		Dir: "testdata/plandb",
		Setup: func(env *testscript.Env) error {
			name := fmt.Sprintf("plandb_%d_%d", os.Getpid(), seq.Add(1))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.CreateDatabase(ctx, name); err != nil {
				return err
			}
			env.Defer(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := cluster.DropDatabase(ctx, name); err != nil {
					env.T().Log(err)
				}
			})
			env.Setenv("RWC_DATABASE_URL", cluster.DSN(name))
			env.Setenv("RWC_TIMEZONE", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"commit":   cmdCommit,
			"sql":      cmdSQL,
			"exitcode": cmdExitCode,
		},
	})
}

func startCluster(t *testing.T) *pgcluster.Cluster {
	t.Helper()
	tmp, err := os.MkdirTemp("", "rwc-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, "data")})
	t.Cleanup(func() {
		if c != nil {
			if err := c.Stop(); err != nil {
				t.Error(err)
			}
		}
		os.RemoveAll(tmp)
	})
	if err != nil {
		t.Fatalf("PostgreSQL unavailable (set RWC_SKIP_PG=1 to skip): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("PostgreSQL unavailable (set RWC_SKIP_PG=1 to skip): %v", err)
	}
	return c
}

func cmdCommit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: commit MSG")
	}
	dir := ts.MkAbs(".")
	repo, err := git.PlainOpen(dir)
	if err == git.ErrRepositoryNotExists {
		repo, err = git.PlainInit(dir, false)
	}
	ts.Check(err)
	wt, err := repo.Worktree()
	ts.Check(err)
	ts.Check(wt.AddWithOptions(&git.AddOptions{All: true}))
	// Each script's nth commit has the same time on every run, so the same
	// content gives the same hash.
	n, _ := strconv.Atoi(ts.Getenv("COMMIT_SEQ"))
	ts.Setenv("COMMIT_SEQ", strconv.Itoa(n+1))
	when := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	sig := &object.Signature{Name: "Plan Test", Email: "plan@rwc.dev", When: when}
	h, err := wt.Commit(args[0], &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	ts.Check(err)
	ts.Setenv("COMMIT", h.String())
}

func cmdSQL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sql STMT")
	}
	db, err := sql.Open("postgres", ts.Getenv("RWC_DATABASE_URL"))
	ts.Check(err)
	defer db.Close()
	rows, err := db.Query(args[0])
	if err == nil {
		var cols []string
		if cols, err = rows.Columns(); err == nil {
			for rows.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err = rows.Scan(ptrs...); err != nil {
					break
				}
				out := make([]string, len(cols))
				for i, v := range vals {
					out[i] = v.String
					if !v.Valid {
						out[i] = "NULL"
					}
				}
				fmt.Fprintln(ts.Stdout(), strings.Join(out, "\t"))
			}
			if err == nil {
				err = rows.Err()
			}
		}
		rows.Close()
	}
	switch {
	case err != nil && !neg:
		ts.Fatalf("sql: %v", err)
	case err == nil && neg:
		ts.Fatalf("sql: unexpected success")
	}
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	code := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		code = ee.ExitCode()
	}
	if code != want {
		ts.Fatalf("%s exited %d, want %d", args[1], code, want)
	}
}

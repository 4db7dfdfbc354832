package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/rwc-dev/rwc/internal/golden"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// planAt is the instant every golden plan is resolved at.
const planAt = "2026-11-29T12:00:00Z"

// TestPlanGolden runs the real `rwc plan` over every testdata/plan/<case>/
// (see testdata/plan/README.md) in the three formats and compares the
// output and the --detailed-exitcode status with the case's want files.
func TestPlanGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/plan/*/head")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no plan cases: %v", err)
	}
	for _, head := range cases {
		dir := filepath.Dir(head)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			repo, base := planRepo(t, dir)
			common := []string{"-C", repo, "plan", "--no-database", "--base", base, "--at", planAt}
			var code0 int
			for i, f := range []struct{ format, want string }{{"text", "want.txt"}, {"markdown", "want.md"}, {"json", "want.json"}} {
				out, errOut, code := runRWC(t, append(common, "--format", f.format, "--detailed-exitcode")...)
				if errOut != "" {
					t.Errorf("--format %s wrote to stderr:\n%s", f.format, errOut)
				}
				if i == 0 {
					code0 = code
				} else if code != code0 {
					t.Errorf("--format %s exited %d, --format text %d", f.format, code, code0)
				}
				golden(t, filepath.Join(dir, f.want), out)
			}
			golden(t, filepath.Join(dir, "want.exitcode"), strconv.Itoa(code0)+"\n")
			// Without --detailed-exitcode the status is 0 (1 when the plan has
			// errors) and the output the same.
			out, _, code := runRWC(t, append(common, "--format", "text")...)
			want := 0
			if code0 == 1 {
				want = 1
			}
			if code != want {
				t.Errorf("without --detailed-exitcode: exit %d, want %d", code, want)
			}
			if want, _ := os.ReadFile(filepath.Join(dir, "want.txt")); !*update && out != string(want) {
				t.Errorf("without --detailed-exitcode the text differs:\n%s", out)
			}
		})
	}
	if len(cases) < 12 {
		t.Errorf("the plan corpus has %d cases; keep at least 12", len(cases))
	}
}

// planRepo builds the case's git repository in a temp dir and returns it
// with the --base revision to plan against.
func planRepo(t *testing.T, caseDir string) (dir, base string) {
	t.Helper()
	dir = t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	// Fixed times make the commit hashes, hence the golden output, stable.
	when := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	commit := func(msg string) {
		t.Helper()
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "Golden Test", Email: "golden@rwc.dev", When: when}
		if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true}); err != nil {
			t.Fatal(err)
		}
		when = when.Add(time.Hour)
	}
	pipelines := filepath.Join(dir, "pipelines")
	if _, err := os.Stat(filepath.Join(caseDir, "base")); err == nil {
		copyTree(t, filepath.Join(caseDir, "base"), pipelines)
	} else if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("nothing deployed yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit("base")
	if err := os.RemoveAll(pipelines); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(caseDir, "head"), pipelines)
	if _, err := os.Stat(filepath.Join(caseDir, "uncommitted")); err == nil {
		return dir, "HEAD"
	}
	commit("head")
	return dir, "HEAD~1"
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runRWC runs the command in-process with stdout and stderr captured
// through pipes, and restores the working directory -C moves. The plans
// are made without a database: the cases pass --no-database, as CI (where
// the suite runs with CI=true) requires.
func runRWC(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("RWC_DATABASE_URL", "")
	t.Setenv("RWC_TIMEZONE", "")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	}()
	// In-process: all the CLI prints goes to the writers it is given.
	var out, errOut bytes.Buffer
	code = execute(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// golden is golden.Check with this package's -update flag.
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, got, *update, "go test ./cmd/rwc -update")
}

// docs/plan-comment.md shows the review example as rwc renders it now
// (-update copies it there).
func TestDocsShowTheReviewExample(t *testing.T) {
	want, err := os.ReadFile("testdata/plan/review_example/want.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/plan-comment.md")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- example: cmd/rwc/testdata/plan/review_example/want.md -->\n", "<!-- end of example -->"
	head, rest, ok := strings.Cut(string(doc), start)
	example, tail, ok2 := strings.Cut(rest, end)
	if ok && ok2 && *update {
		if err := os.WriteFile("../../docs/plan-comment.md", []byte(head+start+string(want)+end+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !ok || !ok2 || example != string(want) {
		t.Errorf("docs/plan-comment.md does not show testdata/plan/review_example/want.md as it is: copy it between %q and %q", strings.TrimSpace(start), end)
	}
}

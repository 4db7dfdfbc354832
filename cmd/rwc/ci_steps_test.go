package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// TestCIRecipeSteps runs the CI recipe's steps as GitHub Actions would, in
// order, against a real PostgreSQL, through a sequence of pushes and pull
// requests: each run: script with bash -eo pipefail in a shallow checkout
// of a local origin, with CI=true, the GITHUB_* and RUNNER_* variables,
// GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY as the runner handles
// them, the env: the workflow gives it, and secrets: the read-only
// rwc_planner and the deploying rwc_deployer of docs/least-privilege.md
// (made by its SQL block), none for a fork. The release the recipe
// downloads is this rwc (or the binary RWC_CI_RWC names), served from
// 127.0.0.1 with its checksums.txt.
//
// What is not GitHub's own here: actions/checkout (a shallow fetch of the
// commit, done by the test), actions/upload-artifact and
// actions/download-artifact (copies into a directory), and GitHub's API:
// gh is a stub (fakeGH) answering the calls the recipe makes from files the
// test writes (pull requests' heads, commits' pull requests, artifacts,
// comments), without evaluating --jq. The if: conditions are the recipe's
// own strings, each decided by a rule of this test (ghConditions): a
// condition the test does not know fails it.
func TestCIRecipeSteps(t *testing.T) {
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	for _, tool := range []string{"git", "curl", "sha256sum", "awk", "tar", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the recipe's steps need %s: %v", tool, err)
		}
	}
	wf, _ := readWorkflow(t, recipeFile)
	cw, _ := readWorkflow(t, recipeCommentFile)
	ci := newCIWorld(t, wf)

	// The first merge deploys page_views (March).
	c1 := ci.commit("main", "pipelines/views.yaml", ciSpec("2026-03-01", "event_date"), "views")
	r := ci.runWorkflow(wf, ciEvent{name: "push", sha: c1, ref: "main"})
	r.want(t, "apply", true)
	r.wantSkipped(t, "apply", "Fetch the plan reviewed in the pull request")
	if !strings.Contains(r.summary["apply"], "page_views") {
		t.Errorf("the apply's summary does not name page_views:\n%s", r.summary["apply"])
	}
	ci.wantRows(t, `SELECT count(*) FROM analytics.page_views WHERE event_date < '2026-03-01'`, 0)

	// A pull request widening the window to February: planned as
	// rwc_planner, against the deployed state; the comment is posted, then
	// updated in place.
	c2 := ci.commit("widen", "pipelines/views.yaml", ciSpec("2026-02-01", "event_date"), "February too")
	pr7 := ciEvent{name: "pull_request", sha: c2, pr: 7, base: "main"}
	r = ci.runWorkflow(wf, pr7)
	r.want(t, "plan", true)
	r.wantSkipped(t, "plan", "rwc plan (fork, no database)")
	art := ci.artifact(t, "rwc-plan-"+c2)
	for _, f := range []string{"pr", "plan.md", "plan.json"} {
		if _, err := os.Stat(filepath.Join(art, f)); err != nil {
			t.Errorf("the plan artifact has no %s", f)
		}
	}
	planMD := readText(t, filepath.Join(art, "plan.md"))
	if !strings.Contains(planMD, "page_views") || !strings.Contains(planMD, "predicate_widened") || !strings.Contains(r.summary["plan"], "predicate_widened") {
		t.Errorf("the PR's plan (and summary) do not show page_views' widened window:\n%s", planMD)
	}
	ci.gh.pull(7, c2)
	r = ci.runComment(cw, pr7, "success")
	r.want(t, "comment", true)
	body := ci.gh.comment(t, 7)
	if !strings.HasPrefix(body, "<!-- rwc plan -->\n### rwc plan") || !strings.Contains(body, "predicate_widened") || strings.Contains(body, "From a fork") {
		t.Errorf("the PR comment:\n%s", body)
	}
	r = ci.runComment(cw, pr7, "success")
	r.want(t, "comment", true)
	if calls := ci.gh.calls(); strings.Count(calls, "--method POST") != 1 || strings.Count(calls, "--method PATCH") != 1 {
		t.Errorf("the second comment run did not update the first comment; gh calls:\n%s", calls)
	}

	// The merge, with RWC_APPLY_REVIEWED_PLAN=true: the plan saved by the
	// PR's run is applied.
	c3 := ci.merge("widen", "Merge #7")
	ci.gh.commitPull(c3, 7)
	ci.vars["RWC_APPLY_REVIEWED_PLAN"] = "true"
	r = ci.runWorkflow(wf, ciEvent{name: "push", sha: c3, ref: "main"})
	r.want(t, "apply", true)
	if !strings.Contains(r.log["apply"], "Applying the plan reviewed in #7") {
		t.Errorf("the merge did not apply the reviewed plan:\n%s", r.log["apply"])
	}
	ci.wantRows(t, `SELECT count(*) FROM analytics.page_views WHERE event_date < '2026-03-01'`, 1)
	ci.wantRows(t, fmt.Sprintf(`SELECT count(*) FROM rwc.deployments WHERE "commit" = '%s'`, c3), 1)

	// Another pull request is planned; the daily run applies before it is
	// merged, so its reviewed plan is stale: refused, nothing changed.
	c4 := ci.commit("january", "pipelines/views.yaml", ciSpec("2026-01-01", "event_date"), "January too")
	pr8 := ciEvent{name: "pull_request", sha: c4, pr: 8, base: "main"}
	ci.runWorkflow(wf, pr8).want(t, "plan", true)
	r = ci.runWorkflow(wf, ciEvent{name: "schedule", sha: c3, ref: "main"})
	r.want(t, "apply", true)
	r.wantSkipped(t, "apply", "Fetch the plan reviewed in the pull request")
	c5 := ci.merge("january", "Merge #8")
	ci.gh.commitPull(c5, 8)
	ci.gh.pull(8, c4)
	r = ci.runWorkflow(wf, ciEvent{name: "push", sha: c5, ref: "main"})
	r.want(t, "apply", false)
	if !strings.Contains(r.log["apply"], "the saved plan is stale") {
		t.Errorf("a stale reviewed plan: the apply's log does not say so:\n%s", r.log["apply"])
	}
	ci.wantRows(t, `SELECT count(*) FROM analytics.page_views WHERE event_date < '2026-02-01'`, 0)
	// By hand, the specs as they are.
	r = ci.runWorkflow(wf, ciEvent{name: "workflow_dispatch", sha: c5, ref: "main"})
	r.want(t, "apply", true)
	ci.wantRows(t, `SELECT count(*) FROM analytics.page_views WHERE event_date < '2026-02-01'`, 1)
	delete(ci.vars, "RWC_APPLY_REVIEWED_PLAN")

	// Lint errors: the job fails, and the plan with the diagnostics is
	// still written and posted.
	c6 := ci.commit("typo", "pipelines/views.yaml", ciSpec("2026-01-01", "event_dat"), "typo")
	pr9 := ciEvent{name: "pull_request", sha: c6, pr: 9, base: "main"}
	r = ci.runWorkflow(wf, pr9)
	r.want(t, "plan", false)
	r.wantStep(t, "plan", "rwc lint", false)
	r.wantStep(t, "plan", "rwc plan", false)
	if !strings.Contains(r.log["plan"], "::error file=pipelines/views.yaml") {
		t.Errorf("lint wrote no annotation:\n%s", r.log["plan"])
	}
	ci.gh.pull(9, c6)
	ci.runComment(cw, pr9, "failure").want(t, "comment", true)
	if body := ci.gh.comment(t, 9); !strings.Contains(body, "The specs have errors: nothing was planned") || !strings.Contains(body, "RW202") {
		t.Errorf("the comment of a PR with lint errors:\n%s", body)
	}

	// The read-only secret missing: the comment says why there is no plan.
	pr10 := ciEvent{name: "pull_request", sha: c4, pr: 10, base: "main", noSecrets: true}
	r = ci.runWorkflow(wf, pr10)
	r.want(t, "plan", false)
	if md := readText(t, filepath.Join(ci.artifact(t, "rwc-plan-"+c4), "plan.md")); !strings.Contains(md, "rwc plan failed: nothing was planned") || !strings.Contains(md, "RWC_DATABASE_URL is set but empty") {
		t.Errorf("a plan without its secret:\n%s", md)
	}

	// A fork's pull request: no secrets, planned without a database
	// against main's specs; the comment says so.
	withExtra := strings.NewReplacer("page: text", "page: text\n      extra: text", "SELECT event_date, page FROM", "SELECT event_date, page, page AS extra FROM").Replace(ciSpec("2026-01-01", "event_date"))
	c7 := ci.commit("fork", "pipelines/views.yaml", withExtra, "a column")
	pr11 := ciEvent{name: "pull_request", sha: c7, pr: 11, base: "main", fork: true, noSecrets: true}
	r = ci.runWorkflow(wf, pr11)
	r.want(t, "plan", true)
	r.wantSkipped(t, "plan", "rwc plan")
	ci.gh.pull(11, c7)
	ci.runComment(cw, pr11, "success").want(t, "comment", true)
	if body := ci.gh.comment(t, 11); !strings.Contains(body, "From a fork") || !strings.Contains(body, "column_added") {
		t.Errorf("a fork's comment:\n%s", body)
	}

	// A run whose artifact names another pull request (a fork's run can
	// write any number there) posts nothing.
	if err := os.WriteFile(filepath.Join(ci.artifact(t, "rwc-plan-"+c6), "pr"), []byte("11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := ci.gh.calls()
	spoof := ciEvent{name: "pull_request", sha: c6, pr: 11, base: "main", fork: true}
	r = ci.runComment(cw, spoof, "success")
	r.want(t, "comment", true)
	if after := ci.gh.calls(); strings.Count(after, "--method") != strings.Count(before, "--method") {
		t.Errorf("a plan of %s was posted to #11, whose head is %s:\n%s", c6, c7, after)
	}
}

// ciSpec is the pipeline of the recipe's runs: page_views from raw.events
// since from; col is the window's column (a typo makes a lint error).
func ciSpec(from, col string) string {
	return fmt.Sprintf(`pipeline: views
schema: analytics
tables:
  page_views:
    replace_where: %s >= date('%s')
    columns:
      event_date: date
      page: text
    query: SELECT event_date, page FROM raw.events
`, col, from)
}

const ciSources = `
	CREATE SCHEMA raw;
	CREATE TABLE raw.events (event_date date, page text);
	INSERT INTO raw.events VALUES ('2026-01-15', 'home'), ('2026-02-15', 'home'), ('2026-03-09', 'cart');`

type ciWorld struct {
	t        *testing.T
	dir      string
	origin   string
	dev      string
	bin      string // rwc and the fake gh are not on PATH: the steps install rwc
	fakeBin  string
	releases string
	planner  string
	deployer string
	db       *sql.DB
	gh       *fakeGH
	vars     map[string]string
	runs     int
	arts     map[string]string
}

func newCIWorld(t *testing.T, wf *ghWorkflow) *ciWorld {
	ci := &ciWorld{t: t, dir: t.TempDir(), vars: map[string]string{}, arts: map[string]string{}}
	cluster := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.CreateDatabase(ctx, "cirecipe"); err != nil {
		t.Fatal(err)
	}
	dsn := cluster.DSN("cirecipe")
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ci.db = db
	lp, err := os.ReadFile("../../docs/least-privilege.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?ms)^```sql\n(.*?)^```").FindStringSubmatch(string(lp))
	if block == nil {
		t.Fatal("docs/least-privilege.md has no ```sql block")
	}
	for _, q := range []string{ciSources, block[1]} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	ci.planner, ci.deployer = withUser(t, dsn, "rwc_planner"), withUser(t, dsn, "rwc_deployer")

	// The release: this rwc, as the goreleaser archive names it; or the
	// binary RWC_CI_RWC names (a release build, a static one).
	ci.bin = filepath.Join(ci.dir, "build")
	built := filepath.Join(ci.bin, "rwc")
	if given := os.Getenv("RWC_CI_RWC"); given != "" {
		built = given
	} else if err := pgtest.BuildRWC(built); err != nil {
		t.Fatal(err)
	}
	version := wf.Env["RWC_VERSION"]
	archive := fmt.Sprintf("rwc_%s_linux_%s.tar.gz", version, runtime.GOARCH)
	tgz := tarGz(t, built)
	sum := sha256.Sum256(tgz)
	checksums := fmt.Sprintf("%x  rwc_%s_linux_other.tar.gz\n%x  %s\n", sha256.Sum256(nil), version, sum, archive)
	mux := http.NewServeMux()
	mux.HandleFunc("/v"+version+"/"+archive, func(w http.ResponseWriter, _ *http.Request) { w.Write(tgz) })
	mux.HandleFunc("/v"+version+"/checksums.txt", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(checksums)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ci.releases = srv.URL

	ci.gh = newFakeGH(t, filepath.Join(ci.dir, "gh"))
	ci.fakeBin = filepath.Join(ci.dir, "fakebin")
	if err := os.MkdirAll(ci.fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ci.fakeBin, "gh"), []byte(fakeGHScript), 0o755); err != nil {
		t.Fatal(err)
	}

	ci.origin = filepath.Join(ci.dir, "origin.git")
	ci.dev = filepath.Join(ci.dir, "dev")
	ci.git(ci.dir, "init", "-q", "--bare", "-b", "main", ci.origin)
	ci.git(ci.dir, "init", "-q", "-b", "main", ci.dev)
	ci.git(ci.dev, "remote", "add", "origin", ci.origin)
	return ci
}

func withUser(t *testing.T, dsn, user string) string {
	t.Helper()
	i := strings.Index(dsn, "://")
	j := strings.Index(dsn[i+3:], "@")
	if i < 0 || j < 0 {
		t.Fatalf("cannot set the user of %s", dsn)
	}
	return dsn[:i+3] + user + dsn[i+3+j:]
}

func tarGz(t *testing.T, bin string) []byte {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
		mode int64
	}{{"LICENSE", []byte("license\n"), 0o644}, {"rwc", data, 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func (ci *ciWorld) gitEnv() []string {
	home := filepath.Join(ci.dir, "home")
	os.MkdirAll(home, 0o755)
	return []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@rwc.dev",
		"GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@rwc.dev", "PATH=" + os.Getenv("PATH"), "GIT_CEILING_DIRECTORIES=" + ci.dir}
}

func (ci *ciWorld) git(dir string, args ...string) string {
	ci.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = ci.gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		ci.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes file on branch (from main when new), commits and pushes
// it; main's commits are pushes to main, others pull requests' heads.
func (ci *ciWorld) commit(branch, file, content, msg string) string {
	ci.t.Helper()
	if branch != "main" {
		if ci.git(ci.dev, "branch", "--list", branch) == "" {
			ci.git(ci.dev, "checkout", "-q", "-b", branch, "main")
		} else {
			ci.git(ci.dev, "checkout", "-q", branch)
		}
	}
	path := filepath.Join(ci.dev, file)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		ci.t.Fatal(err)
	}
	ci.git(ci.dev, "add", "-A")
	ci.git(ci.dev, "commit", "-q", "-m", msg)
	ci.git(ci.dev, "push", "-q", "origin", branch)
	sha := ci.head(branch)
	ci.git(ci.dev, "checkout", "-q", "main")
	return sha
}

func (ci *ciWorld) head(branch string) string { return ci.git(ci.dev, "rev-parse", branch) }

// merge merges branch into main with a merge commit, as a pull request's
// merge button does, and pushes main.
func (ci *ciWorld) merge(branch, msg string) string {
	ci.t.Helper()
	ci.git(ci.dev, "checkout", "-q", "main")
	ci.git(ci.dev, "merge", "-q", "--no-ff", "-m", msg, branch)
	ci.git(ci.dev, "push", "-q", "origin", "main")
	return ci.head("main")
}

func (ci *ciWorld) wantRows(t *testing.T, q string, want int64) {
	t.Helper()
	var n int64
	if err := ci.db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if n != want {
		t.Errorf("%s: %d, want %d", q, n, want)
	}
}

func (ci *ciWorld) artifact(t *testing.T, name string) string {
	t.Helper()
	dir, ok := ci.arts[name]
	if !ok {
		t.Fatalf("no artifact %s was uploaded", name)
	}
	return dir
}

// ciEvent is what triggered a run: the event, the commit, and for a pull
// request its number, base branch, and whether it comes from a fork (or
// gets no secrets, as a fork's does).
type ciEvent struct {
	name      string
	sha, ref  string
	pr        int
	base      string
	fork      bool
	noSecrets bool
	runID     int
}

type ciRun struct {
	ran     map[string]bool
	ok      map[string]bool
	steps   map[string]map[string]string // job -> step -> "ok", "failed", "skipped"
	log     map[string]string
	summary map[string]string
}

func (r *ciRun) want(t *testing.T, job string, ok bool) {
	t.Helper()
	if !r.ran[job] {
		t.Fatalf("job %s did not run", job)
	}
	if r.ok[job] != ok {
		t.Fatalf("job %s succeeded: %v, want %v; its log:\n%s", job, r.ok[job], ok, r.log[job])
	}
}

func (r *ciRun) wantStep(t *testing.T, job, step string, ok bool) {
	t.Helper()
	want := map[bool]string{true: "ok", false: "failed"}[ok]
	if got := r.steps[job][step]; got != want {
		t.Errorf("job %s, step %q: %s, want %s", job, step, got, want)
	}
}

func (r *ciRun) wantSkipped(t *testing.T, job, step string) {
	t.Helper()
	if got := r.steps[job][step]; got != "skipped" {
		t.Errorf("job %s, step %q: %s, want skipped", job, step, got)
	}
}

// ghContext is what the expressions of a run read.
type ghContext struct {
	ev      ciEvent
	vars    map[string]string
	exprs   map[string]string
	wfRun   ciEvent // workflow_run: the run it follows
	outcome string  // workflow_run: that run's conclusion
}

// ghConditions decides each if: of the recipe (normalised: no ${{ }}, no
// space) as GitHub would for the events of this test; failed is whether an
// earlier step of the job failed. A status function (!cancelled()) runs
// the step after a failure; without one, success() is implied.
var ghConditions = map[string]func(c *ghContext) bool{
	"":                                  func(*ghContext) bool { return true },
	"github.event_name=='pull_request'": func(c *ghContext) bool { return c.ev.name == "pull_request" },
	"github.event_name!='pull_request'": func(c *ghContext) bool { return c.ev.name != "pull_request" },
	"!cancelled()":                      func(*ghContext) bool { return true },
	"!cancelled()&&github.event.pull_request.head.repo.full_name==github.repository": func(c *ghContext) bool { return !c.ev.fork },
	"!cancelled()&&github.event.pull_request.head.repo.full_name!=github.repository": func(c *ghContext) bool { return c.ev.fork },
	"github.event_name=='push'&&vars.RWC_APPLY_REVIEWED_PLAN=='true'": func(c *ghContext) bool {
		return c.ev.name == "push" && c.vars["RWC_APPLY_REVIEWED_PLAN"] == "true"
	},
	"github.event.workflow_run.event=='pull_request'&&github.event.workflow_run.conclusion!='cancelled'&&github.event.workflow_run.conclusion!='skipped'": func(c *ghContext) bool {
		return c.wfRun.name == "pull_request" && c.outcome != "cancelled" && c.outcome != "skipped"
	},
}

func (c *ghContext) cond(t *testing.T, expr string, failed bool) bool {
	t.Helper()
	norm := strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(expr), "${{"), "}}")), "")
	f, ok := ghConditions[norm]
	if !ok {
		t.Fatalf("if: %s: this test does not know the condition; teach ghConditions", expr)
	}
	status := strings.Contains(norm, "cancelled()") || strings.Contains(norm, "always()") || strings.Contains(norm, "failure()")
	return f(c) && (status || !failed)
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

func (c *ghContext) expand(t *testing.T, s string) string {
	t.Helper()
	return ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		name := ghExpr.FindStringSubmatch(m)[1]
		v, ok := c.exprs[name]
		if !ok {
			t.Fatalf("%s: this test does not know the expression; teach ghContext", m)
		}
		return v
	})
}

const ghRepo = "acme/warehouse"

func (ci *ciWorld) context(ev ciEvent, runnerTemp string) *ghContext {
	planner, deployer := ci.planner, ci.deployer
	if ev.noSecrets {
		planner, deployer = "", ""
	}
	return &ghContext{ev: ev, vars: ci.vars, exprs: map[string]string{
		"secrets.RWC_PLAN_DATABASE_URL":                       planner,
		"secrets.RWC_DATABASE_URL":                            deployer,
		"github.token":                                        "fake-token",
		"github.event.pull_request.number":                    fmt.Sprint(ev.pr),
		"github.event.pull_request.head.sha":                  ev.sha,
		"runner.temp":                                         runnerTemp,
		"env.RWC_OUT":                                         "rwc-plan",
		"github.event.workflow_run.head_sha":                  ev.sha,
		"github.event.workflow_run.id":                        fmt.Sprint(ev.runID),
		"github.event.workflow_run.html_url":                  fmt.Sprintf("https://github.com/%s/actions/runs/%d", ghRepo, ev.runID),
		"github.event.workflow_run.head_repository.full_name": map[bool]string{true: "someone/warehouse", false: ghRepo}[ev.fork],
	}}
}

// runWorkflow runs the jobs of rwc.yml the event triggers.
func (ci *ciWorld) runWorkflow(wf *ghWorkflow, ev ciEvent) *ciRun {
	ci.t.Helper()
	ci.runs++
	ev.runID = 1000 + ci.runs
	return ci.runJobs(wf, ev, ci.context(ev, ""), ev)
}

// runComment runs rwc-comment.yml after the run of rwc.yml for ev, which
// ended with conclusion; its artifact is the one that run uploaded.
func (ci *ciWorld) runComment(cw *ghWorkflow, ev ciEvent, conclusion string) *ciRun {
	ci.t.Helper()
	ev.runID = ci.gh.runOf("rwc-plan-" + ev.sha)
	c := ci.context(ev, "")
	c.wfRun, c.outcome = ev, conclusion
	return ci.runJobs(cw, ciEvent{name: "workflow_run", sha: ci.head("main"), ref: "main", runID: ev.runID}, c, ev)
}

func (ci *ciWorld) runJobs(wf *ghWorkflow, ev ciEvent, c *ghContext, src ciEvent) *ciRun {
	t := ci.t
	t.Helper()
	r := &ciRun{ran: map[string]bool{}, ok: map[string]bool{}, steps: map[string]map[string]string{}, log: map[string]string{}, summary: map[string]string{}}
	names := make([]string, 0, len(wf.Jobs))
	for name := range wf.Jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		job := wf.Jobs[name]
		if !c.cond(t, job.If, false) {
			continue
		}
		r.ran[name] = true
		r.steps[name] = map[string]string{}
		ok, log, summary := ci.runJob(wf, job, name, ev, c, src, r.steps[name])
		r.ok[name], r.log[name], r.summary[name] = ok, log, summary
	}
	return r
}

// runJob runs one job's steps in a fresh workspace and runner.
func (ci *ciWorld) runJob(wf *ghWorkflow, job ghJob, name string, ev ciEvent, c *ghContext, src ciEvent, status map[string]string) (bool, string, string) {
	t := ci.t
	t.Helper()
	root, err := os.MkdirTemp(ci.dir, "run-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	ws, temp := filepath.Join(root, "ws"), filepath.Join(root, "temp")
	os.MkdirAll(temp, 0o755)
	c.exprs["runner.temp"] = temp
	var log strings.Builder
	var summary strings.Builder
	var paths []string
	extraEnv := map[string]string{}
	failed := false
	for _, s := range job.Steps {
		label := s.label()
		if !c.cond(t, s.If, failed) {
			status[label] = "skipped"
			continue
		}
		fmt.Fprintf(&log, "--- %s\n", label)
		var stepErr error
		switch {
		case strings.HasPrefix(s.Uses, "actions/checkout@"):
			ci.checkout(ws, src)
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			dir := filepath.Join(ws, c.expand(t, s.With["path"]))
			artName := c.expand(t, s.With["name"])
			if _, err := os.Stat(dir); err == nil {
				ci.arts[artName] = dir
				ci.gh.artifact(artName, ev.runID, dir)
			} else if s.With["if-no-files-found"] != "ignore" {
				stepErr = fmt.Errorf("upload-artifact: no files at %s", dir)
			}
		case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			artName, runID, dest := c.expand(t, s.With["name"]), c.expand(t, s.With["run-id"]), c.expand(t, s.With["path"])
			if got := fmt.Sprint(ci.gh.runOf(artName)); got != runID {
				stepErr = fmt.Errorf("download-artifact: %s is run %s's, not run %s's", artName, got, runID)
			} else {
				if stepErr = os.MkdirAll(dest, 0o755); stepErr == nil {
					stepErr = exec.Command("cp", "-R", ci.arts[artName]+"/.", dest+"/").Run()
				}
			}
		case s.Uses != "":
			t.Fatalf("job %s, step %s: this test does not emulate %s", name, label, s.Uses)
		default:
			os.MkdirAll(ws, 0o755)
			var out string
			out, stepErr = ci.runStep(wf, job, s, ws, temp, ev, c, extraEnv, &summary, &paths)
			log.WriteString(out)
		}
		if stepErr != nil {
			fmt.Fprintf(&log, "(step failed: %v)\n", stepErr)
			status[label] = "failed"
			failed = true
		} else {
			status[label] = "ok"
		}
	}
	return !failed, log.String(), summary.String()
}

// checkout is actions/checkout@v4 as it fetches: the commit alone (depth
// 1), origin named. A pull request's is its head (GitHub's is the merge
// of the head into the base, the same specs here: every head starts at
// main's head).
func (ci *ciWorld) checkout(ws string, ev ciEvent) {
	ci.git(ci.dir, "init", "-q", ws)
	ci.git(ws, "remote", "add", "origin", "file://"+ci.origin)
	ci.git(ws, "-c", "protocol.version=2", "fetch", "-q", "--depth=1", "origin", ev.sha)
	ci.git(ws, "checkout", "-q", "--detach", "FETCH_HEAD")
}

func (ci *ciWorld) runStep(wf *ghWorkflow, job ghJob, s ghStep, ws, temp string, ev ciEvent, c *ghContext, extraEnv map[string]string, summary *strings.Builder, paths *[]string) (string, error) {
	t := ci.t
	t.Helper()
	files := map[string]string{}
	for _, f := range []string{"GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"} {
		files[f] = filepath.Join(temp, "_runner_file_commands", fmt.Sprintf("%s_%d", strings.ToLower(f), time.Now().UnixNano()))
		os.MkdirAll(filepath.Dir(files[f]), 0o755)
		os.WriteFile(files[f], nil, 0o644)
	}
	script := filepath.Join(temp, fmt.Sprintf("step-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
		t.Fatal(err)
	}
	path := strings.Join(append(append(append([]string{}, *paths...), ci.fakeBin), os.Getenv("PATH")), string(os.PathListSeparator))
	env := map[string]string{
		"PATH": path, "HOME": filepath.Join(ci.dir, "home"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": ev.name, "GITHUB_SHA": ev.sha,
		"GITHUB_REPOSITORY": ghRepo, "GITHUB_WORKSPACE": ws, "GITHUB_WORKFLOW": wf.Name,
		"GITHUB_RUN_ID": fmt.Sprint(ev.runID), "RUNNER_TEMP": temp, "RUNNER_OS": "Linux",
		"RUNNER_ARCH": map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
		"FAKE_GH":     ci.gh.dir, "GIT_CEILING_DIRECTORIES": ci.dir,
	}
	if ev.name == "pull_request" {
		env["GITHUB_BASE_REF"], env["GITHUB_HEAD_REF"], env["GITHUB_REF"] = ev.base, "pr", fmt.Sprintf("refs/pull/%d/merge", ev.pr)
	} else {
		env["GITHUB_REF"] = "refs/heads/" + ev.ref
	}
	for k, f := range files {
		env[k] = f
	}
	for _, layer := range []map[string]string{wf.Env, job.Env, extraEnv, s.Env} {
		for k, v := range layer {
			env[k] = c.expand(t, v)
		}
	}
	// The release is served here, not from GitHub.
	if _, ok := env["RWC_RELEASES"]; ok {
		env["RWC_RELEASES"] = ci.releases
	}
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = ws
	cmd.Env = envList
	out, err := cmd.CombinedOutput()
	sum, _ := os.ReadFile(files["GITHUB_STEP_SUMMARY"])
	summary.Write(sum)
	if b, _ := os.ReadFile(files["GITHUB_PATH"]); len(b) > 0 {
		lines := strings.Fields(string(b))
		for i := len(lines) - 1; i >= 0; i-- {
			*paths = append([]string{lines[i]}, *paths...)
		}
	}
	if b, _ := os.ReadFile(files["GITHUB_ENV"]); len(b) > 0 {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.Contains(k, "<<") {
				t.Fatalf("step %s: GITHUB_ENV line %q: this test reads NAME=value lines only", s.label(), line)
			}
			extraEnv[k] = v
		}
	}
	return string(out), err
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakeGH is the state the fake gh answers from: pulls/N (the head sha of
// pull request N), commit-pulls/SHA (the pull request a commit came from),
// artifacts/NAME/run (the run that uploaded it) and files, comments/N/ID.
type fakeGH struct {
	t   *testing.T
	dir string
}

func newFakeGH(t *testing.T, dir string) *fakeGH {
	for _, d := range []string{"pulls", "commit-pulls", "artifacts", "comments"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &fakeGH{t: t, dir: dir}
}

func (g *fakeGH) write(path, content string) {
	g.t.Helper()
	path = filepath.Join(g.dir, path)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

func (g *fakeGH) pull(n int, head string)      { g.write(fmt.Sprintf("pulls/%d", n), head+"\n") }
func (g *fakeGH) commitPull(sha string, n int) { g.write("commit-pulls/"+sha, fmt.Sprintf("%d\n", n)) }
func (g *fakeGH) artifact(name string, run int, dir string) {
	g.write("artifacts/"+name+"/run", fmt.Sprintf("%d\n", run))
	g.write("artifacts/"+name+"/dir", dir+"\n")
}

func (g *fakeGH) runOf(name string) int {
	b, err := os.ReadFile(filepath.Join(g.dir, "artifacts", name, "run"))
	if err != nil {
		g.t.Fatalf("no artifact %s", name)
	}
	var n int
	fmt.Sscan(string(b), &n)
	return n
}

// comment is the one comment on pull request n.
func (g *fakeGH) comment(t *testing.T, n int) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(g.dir, "comments", fmt.Sprint(n), "*"))
	if len(files) != 1 {
		t.Fatalf("pull request #%d has %d comments, want 1; gh calls:\n%s", n, len(files), g.calls())
	}
	return readText(t, files[0])
}

func (g *fakeGH) calls() string {
	b, _ := os.ReadFile(filepath.Join(g.dir, "calls"))
	return string(b)
}

// fakeGHScript answers the gh calls of the recipe from $FAKE_GH, as
// GitHub's API would with their --jq filters applied (it does not read
// them), and fails on any other call.
const fakeGHScript = `#!/usr/bin/env bash
set -euo pipefail
echo "gh $*" >> "$FAKE_GH/calls"
[ "${GH_TOKEN:-}" = fake-token ] || { echo "fake gh: no GH_TOKEN" >&2; exit 4; }
repo="repos/$GITHUB_REPOSITORY"
if [ "$1" = run ] && [ "$2" = download ]; then
  run=$3; shift 3
  while [ $# -gt 0 ]; do
    case "$1" in --repo) shift 2 ;; --name) name=$2; shift 2 ;; --dir) dir=$2; shift 2 ;; *) echo "fake gh: run download $1?" >&2; exit 1 ;; esac
  done
  [ "$(cat "$FAKE_GH/artifacts/$name/run")" = "$run" ] || { echo "fake gh: no artifact $name in run $run" >&2; exit 1; }
  mkdir -p "$dir"
  cp -R "$(cat "$FAKE_GH/artifacts/$name/dir")/." "$dir/"
  exit 0
fi
[ "$1" = api ] || { echo "fake gh: unexpected: $*" >&2; exit 1; }
shift
method=GET
if [ "$1" = --method ]; then method=$2; shift 2; fi
path=$1; shift
case "$method $path" in
  "GET $repo/pulls/"*)
    n=${path##*/}
    [ -f "$FAKE_GH/pulls/$n" ] || { echo "gh: Not Found (HTTP 404)" >&2; exit 1; }
    cat "$FAKE_GH/pulls/$n" ;;
  "GET $repo/commits/"*/pulls)
    sha=${path#"$repo/commits/"}; sha=${sha%/pulls}
    cat "$FAKE_GH/commit-pulls/$sha" 2>/dev/null || true ;;
  "GET $repo/actions/artifacts?name="*)
    name=${path#*name=}
    cat "$FAKE_GH/artifacts/$name/run" 2>/dev/null || true ;;
  "GET $repo/issues/"*/comments)
    n=${path#"$repo/issues/"}; n=${n%/comments}
    for f in "$FAKE_GH/comments/$n"/*; do
      [ -f "$f" ] && [ "$(head -n1 "$f")" = "<!-- rwc plan -->" ] && basename "$f"
    done
    true ;;
  "PATCH $repo/issues/comments/"*)
    id=${path##*/}
    [ "$1" = -F ] && [ "${2%%=*}" = body ] || { echo "fake gh: PATCH $*?" >&2; exit 1; }
    f=$(ls "$FAKE_GH"/comments/*/"$id")
    cp "${2#body=@}" "$f" ;;
  "POST $repo/issues/"*/comments)
    n=${path#"$repo/issues/"}; n=${n%/comments}
    [ "$1" = -F ] && [ "${2%%=*}" = body ] || { echo "fake gh: POST $*?" >&2; exit 1; }
    mkdir -p "$FAKE_GH/comments/$n"
    id=$(( $(cat "$FAKE_GH/next-id" 2>/dev/null || echo 100) + 1 ))
    echo "$id" > "$FAKE_GH/next-id"
    cp "${2#body=@}" "$FAKE_GH/comments/$n/$id" ;;
  *) echo "fake gh: unexpected: $method $path $*" >&2; exit 1 ;;
esac
`

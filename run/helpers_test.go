package run_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/run/pgtest/cutproxy"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// now0 is the refresh time of most tests: current_date() is 2026-03-10 in
// UTC, so a window `d >= date_add(current_date(), -2)` is d >= 2026-03-08.
var now0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// env is one test's database, with the state schema in place.
type env struct {
	t   testing.TB
	db  *sql.DB
	dsn string
}

// newServerEnv is newEnv on a server of the test's own, with settings
// (pgtest.Server) the shared one must not have.
func newServerEnv(t testing.TB, settings ...string) *env {
	t.Helper()
	db, dsn := pgtest.Server(t, settings...)
	if err := run.Migrate(context.Background(), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return &env{t: t, db: db, dsn: dsn}
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db, dsn := pgtest.DB(t)
	if err := run.Migrate(context.Background(), db); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return &env{t: t, db: db, dsn: dsn}
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	pgtest.Exec(e.t, e.db, q, args...)
}

// rows returns the rows of q (see pgtest.Rows).
func (e *env) rows(q string) []string {
	e.t.Helper()
	return pgtest.Rows(e.t, e.db, q)
}

// value returns the single value q yields, as text ("<null>" for NULL).
func (e *env) value(q string, args ...any) string {
	e.t.Helper()
	var s sql.NullString
	if err := e.db.QueryRow(q, args...).Scan(&s); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	if !s.Valid {
		return "<null>"
	}
	return s.String
}

func (e *env) count(q string, args ...any) int64 {
	e.t.Helper()
	return pgtest.Count(e.t, e.db, q, args...)
}

// advisoryLocks counts the advisory locks held in this test's database.
func (e *env) advisoryLocks() int64 {
	e.t.Helper()
	return pgtest.AdvisoryLocks(e.t, e.db)
}

// project loads specs given as file name → YAML, failing on lint errors.
func project(t testing.TB, files map[string]string) *compile.Project {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	p, ds, err := compile.Load(fsys, "pipelines")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if ds.HasErrors() {
		t.Fatalf("specs have errors:\n%v", ds)
	}
	return p
}

// flow loads specs and returns one flow.
func flow(t testing.TB, files map[string]string, name string) *compile.Flow {
	t.Helper()
	f := project(t, files).Flow(name)
	if f == nil {
		t.Fatalf("no flow %s", name)
	}
	return f
}

// runner returns a Runner whose clock stands at at.
func (e *env) runner(at time.Time) *run.Runner {
	return run.New(e.db, run.Options{Now: func() time.Time { return at }, LockTimeout: 10 * time.Second})
}

// refresh runs one refresh and fails the test if it fails.
func refresh(t testing.TB, r *run.Runner, req run.Request) run.Result {
	t.Helper()
	res := r.Refresh(context.Background(), req)
	if res.Err != nil {
		t.Fatalf("refresh %s: %v", req.Flow.Name(), res.Err)
	}
	return res
}

// where compiles an override predicate against a flow's columns, the way
// `rwc refresh --where` does.
func where(t testing.TB, f *compile.Flow, text string) *predicate.Predicate {
	t.Helper()
	cols := make([]predicate.Column, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		cols[i] = predicate.Column{Name: c.Name, Type: c.Type}
	}
	p, issues := predicate.Compile(text, cols)
	if len(issues) > 0 || p == nil {
		t.Fatalf("predicate %q: %v", text, issues)
	}
	return p
}

func checkOutcome(t testing.TB, res run.Result, action compile.Action, reasons ...compile.Reason) {
	t.Helper()
	if reasons == nil {
		reasons = []compile.Reason{}
	}
	if res.Action != action || fmt.Sprint(res.Reasons) != fmt.Sprint(reasons) {
		t.Fatalf("%s: action %q reasons %v, want %q %v", res.Flow, res.Action, res.Reasons, action, reasons)
	}
}

// daily is the common shape of these tests: a source ev(d, k, v) and a flow
// t copying it with a two-day window (d >= 2026-03-08 at now0).
const dailySpec = `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, v FROM ev
`

// newDailyEnv is a test's database with ev seeded (seedDaily).
func newDailyEnv(t testing.TB) *env {
	t.Helper()
	e := newEnv(t)
	e.seedDaily()
	return e
}

// seedDaily creates ev with two rows (k a and b) a day from 2026-03-01 to
// 2026-03-10, v = day of month (a) and 10 × day (b).
func (e *env) seedDaily() {
	e.t.Helper()
	e.exec(`CREATE TABLE ev (d date, k text, v integer);
		INSERT INTO ev SELECT d::date, k, CASE k WHEN 'a' THEN extract(day FROM d)::int ELSE 10 * extract(day FROM d)::int END
		FROM generate_series(DATE '2026-03-01', DATE '2026-03-10', interval '1 day') d, (VALUES ('a'), ('b')) k(k)`)
}

// The real rwc binary, built once for the processes that need one.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// rwcBinary builds ./cmd/rwc (once per test binary) and returns its path.
func rwcBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(buildBinary)
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func buildBinary() {
	if binDir, binErr = os.MkdirTemp("", "rwc-run-test-bin-"); binErr != nil {
		return
	}
	binPath = filepath.Join(binDir, "rwc")
	binErr = pgtest.BuildRWC(binPath)
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// writeSpecs writes spec files (names relative to the directory, such as
// backfills/x.yaml) into a fresh directory and returns it.
func writeSpecs(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rwcCmd is `rwc --dsn DSN args...`, run outside any git work tree.
func rwcCmd(t testing.TB, dsn string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(rwcBinary(t), append([]string{"--dsn", dsn}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "RWC_DATABASE_URL=", "RWC_TIMEZONE=UTC", "GIT_CEILING_DIRECTORIES="+filepath.Dir(cmd.Dir))
	return cmd
}

// runRWC runs rwc to completion and returns its exit code and output.
func runRWC(t testing.TB, dsn string, args ...string) (int, string) {
	t.Helper()
	cmd := rwcCmd(t, dsn, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("rwc %v: %v", args, err)
	}
	return 0, out.String()
}

// mustApply runs rwc apply --allow-dirty on dir and fails the test unless
// it succeeds.
func mustApply(t testing.TB, e *env, dir string) string {
	t.Helper()
	code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
	if code != 0 {
		t.Fatalf("rwc apply exited %d:\n%s", code, out)
	}
	return out
}

type flowT = compile.Flow

// reqWindow is a routine refresh of f's own window.
func reqWindow(f *flowT) run.Request { return run.Request{Flow: f, Mode: run.Window} }

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// statements renders a window refresh of f at time at, as the runner does.
func statements(t testing.TB, f *flowT, at time.Time) compile.Statements {
	t.Helper()
	resolved, err := f.Predicate.Resolve(predicate.Resolution{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Statements(resolved, false, compile.Observation{}) // the types agree in every caller's flow
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// proxiedRunner is runner whose connections go through a proxy, which
// logs every statement they send; both close with the test.
func (e *env) proxiedRunner(at time.Time) (*cutproxy.Proxy, *run.Runner) {
	t := e.t
	t.Helper()
	p, dsn := proxied(t, e.dsn, cutproxy.Options{})
	t.Cleanup(p.Close)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return p, run.New(db, run.Options{Now: func() time.Time { return at }, LockTimeout: 10 * time.Second})
}

// proxied starts a cutproxy in front of dsn's server, and returns it with
// the DSN that connects through it.
func proxied(t testing.TB, dsn string, opts cutproxy.Options) (*cutproxy.Proxy, string) {
	t.Helper()
	up, err := cutproxy.Upstream(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cutproxy.Start(up, opts)
	if err != nil {
		t.Fatal(err)
	}
	pdsn, err := p.DSN(dsn)
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p, pdsn
}

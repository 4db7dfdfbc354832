package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rwc-dev/rwc/run/pgcluster"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// TestBackfillEndToEnd runs the real rwc binary (built once, into a
// temporary directory) on a real PostgreSQL: backfills killed with SIGKILL
// between batches and inside one resume at the first unfinished batch and
// end where an uninterrupted run ends; two applies at once share the
// batches, running each once; the clickstream example fills a new
// column for the window, then for a committed backfill's range, and status
// shows which days each column covers. RWC_SKIP_PG=1 skips it.
func TestBackfillEndToEnd(t *testing.T) {
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	binDir := t.TempDir()
	bin := filepath.Join(binDir, "rwc")
	built := make(chan error, 1)
	go func() { built <- buildRWC(bin) }()
	cluster := startCluster(t)
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	h := &e2e{cluster: cluster, bin: bin}
	// Cleanup (the cluster, the binary) waits for the parallel subtests.
	t.Run("kill between batches", func(t *testing.T) {
		t.Parallel()
		h.killAndResume(t, false)
	})
	t.Run("kill inside a batch", func(t *testing.T) {
		t.Parallel()
		h.killAndResume(t, true)
	})
	t.Run("two applies at once", func(t *testing.T) {
		t.Parallel()
		h.concurrentApplies(t)
	})
	t.Run("clickstream uniq_users", func(t *testing.T) {
		t.Parallel()
		h.clickstream(t)
	})
}

// buildRWC builds ./cmd/rwc (this package) into bin.
func buildRWC(bin string) error { return pgtest.BuildRWC(bin) }

// e2e is the cluster and the binary the subtests share.
type e2e struct {
	cluster *pgcluster.Cluster
	bin     string
	seq     atomic.Int64
}

// testApp is the application_name of the test's own sessions.
const testApp = "rwc_backfill_test"

// proj is one subtest's project directory and database.
type proj struct {
	t   *testing.T
	h   *e2e
	dir string // holds pipelines/
	dsn string
	db  *sql.DB
	git *git.Repository // nil: not a git work tree
	n   int             // commits so far
}

func (h *e2e) newProj(t *testing.T, withGit bool) *proj {
	t.Helper()
	name := fmt.Sprintf("bfe2e_%d_%d", os.Getpid(), h.seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.cluster.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	p := &proj{t: t, h: h, dir: t.TempDir(), dsn: h.cluster.DSN(name)}
	// The test's own sessions are told apart from rwc's by their name.
	db, err := sql.Open("postgres", p.dsn+"&application_name="+testApp)
	if err != nil {
		t.Fatal(err)
	}
	p.db = db
	t.Cleanup(func() {
		db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.cluster.DropDatabase(ctx, name); err != nil {
			t.Log(err)
		}
	})
	if err := os.MkdirAll(filepath.Join(p.dir, "pipelines", "backfills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if withGit {
		if p.git, err = git.PlainInit(p.dir, false); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *proj) write(name, text string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, name), []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// commit stages everything and commits it at a fixed time.
func (p *proj) commit(msg string) string {
	p.t.Helper()
	wt, err := p.git.Worktree()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		p.t.Fatal(err)
	}
	when := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC).Add(time.Duration(p.n) * time.Minute)
	p.n++
	sig := &object.Signature{Name: "Backfill Test", Email: "backfill@rwc.dev", When: when}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		p.t.Fatal(err)
	}
	return hash.String()
}

// cmd is rwc ARGS in the project directory, on its database, with
// current_date() read in UTC; its output is not a terminal.
func (p *proj) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(p.h.bin, args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "RWC_DATABASE_URL="+p.dsn, "RWC_TIMEZONE=UTC", "NO_COLOR=1")
	return cmd
}

// rwc runs rwc ARGS to completion and fails the test unless it exits 0.
func (p *proj) rwc(args ...string) string {
	p.t.Helper()
	cmd := p.cmd(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("rwc %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func (p *proj) exec(q string, args ...any) {
	p.t.Helper()
	pgtest.Exec(p.t, p.db, q, args...)
}

// rows is q's rows as row literals, sorted in Go (see pgtest.Rows).
func (p *proj) rows(q string, args ...any) []string {
	p.t.Helper()
	return pgtest.Rows(p.t, p.db, q, args...)
}

func (p *proj) count(q string, args ...any) int {
	p.t.Helper()
	return int(pgtest.Count(p.t, p.db, q, args...))
}

// daySpec is a flow copying ev with a two-day window; slow makes every
// row of its query take 10ms.
func daySpec(slow bool) string {
	v := "v"
	if slow {
		v = "slow(v) AS v"
	}
	return `pipeline: p
tables:
  daily:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d, k, ` + v + ` FROM ev
`
}

// histBackfill recomputes 2020-01-01..2020-01-10 in five batches of two days.
const histBackfill = `backfill: daily
where: d >= date('2020-01-01') && d <= date('2020-01-10')
reason: recompute the first ten days of 2020
batch: 2d
`

// seedKill creates ev (40 rows a day in the backfill's range, two outside
// it, two today) and slow(), applies the flow without the backfill, then
// writes into the target rows the backfill must replace (2020-01-03) and
// one it must keep (2019-12-31); the backfill file is then added.
func seedKill(p *proj, slow bool) {
	p.t.Helper()
	p.exec(`CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN x; END $$;
		CREATE TABLE ev (d date, k text, v integer);
		INSERT INTO ev SELECT d::date, 'k' || i, i * extract(day FROM d)::int
			FROM generate_series(DATE '2020-01-01', DATE '2020-01-10', interval '1 day') d, generate_series(1, 20) i;
		INSERT INTO ev VALUES ('2019-12-31', 'out', 1), ('2020-01-11', 'out', 2),
			((now() AT TIME ZONE 'UTC')::date, 'today', 3), ((now() AT TIME ZONE 'UTC')::date, 'today2', 4)`)
	p.write("pipelines/p.yaml", daySpec(slow))
	p.rwc("apply", "--allow-dirty")
	p.exec(`INSERT INTO daily VALUES ('2020-01-03', 'stale', 999), ('2019-12-31', 'keep', 1)`)
	p.write("pipelines/backfills/hist.yaml", histBackfill)
}

// batchLine matches rwc apply's plain progress line for the backfill.
var batchLine = regexp.MustCompile(`(?m)^backfill pipelines/backfills/hist\.yaml \(daily\): batch (\d+)/5: \d+ deleted, \d+ inserted in [0-9.]+(?:ms|s|µs)$`)

func batchesPrinted(out string) []string {
	var got []string
	for _, m := range batchLine.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	return got
}

const ledgerQuery = `SELECT batch, predicate_cel, rows_deleted, rows_inserted FROM rwc.backfill_batches`

// refRun is what an uninterrupted apply of hist.yaml leaves.
type refRun struct{ target, ledger, totals []string }

// reference applies hist.yaml, fast and uninterrupted, on a database of
// its own.
func (h *e2e) reference(t *testing.T) refRun {
	t.Helper()
	ref := h.newProj(t, false)
	seedKill(ref, false)
	out := ref.rwc("apply", "--allow-dirty")
	if got := batchesPrinted(out); strings.Join(got, ",") != "1,2,3,4,5" {
		t.Fatalf("uninterrupted apply printed batches %v, want 1..5:\n%s", got, out)
	}
	r := refRun{target: ref.rows(`SELECT * FROM daily`), ledger: ref.rows(ledgerQuery),
		totals: ref.rows(`SELECT rows_deleted, rows_inserted, finished_at IS NOT NULL FROM rwc.backfills`)}
	if len(r.target) != 203 { // 200 recomputed, the row kept, today's two
		t.Fatalf("reference target has %d rows, want 203", len(r.target))
	}
	if len(r.ledger) != 5 {
		t.Fatalf("reference ledger has %d batches, want 5: %v", len(r.ledger), r.ledger)
	}
	return r
}

// killAndResume kills `rwc apply` during a five-batch backfill (inside a
// batch's INSERT, or between two batches), checks what the ledger kept,
// and resumes: each batch runs exactly once and the target ends as an
// uninterrupted run's.
func (h *e2e) killAndResume(t *testing.T, inside bool) {
	ref := h.reference(t)
	want, wantLedger := ref.target, ref.ledger
	p := h.newProj(t, false)
	seedKill(p, true)
	cmd := p.cmd("apply", "--allow-dirty")
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			<-exited
		}
	}()
	// waitFor polls cond until it holds, failing if rwc exits first.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			select {
			case err := <-exited:
				killed = true
				t.Fatalf("rwc apply ended (%v) before %s:\n%s", err, what, buf.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 30s:\n%s", what, buf.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	committed := func() int {
		return p.count(`SELECT count(*) FROM rwc.backfill_batches WHERE committed_at IS NOT NULL`)
	}
	// insertPID is the backend running a backfill batch's INSERT, 0 if none.
	insertPID := func() int {
		var pid int
		err := p.db.QueryRow(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
			AND query LIKE 'INSERT INTO "public"."daily"%2020-01-%' AND pid <> pg_backend_pid()`).Scan(&pid)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		return pid
	}

	var victim int       // the backend to terminate with the client
	release := func() {} // the flow's lock, when the test holds it
	if inside {
		// After at least one batch committed, while a later batch's INSERT
		// is writing rows.
		waitFor("INSERT of a batch after the first committed", func() bool {
			if committed() == 0 {
				return false
			}
			victim = insertPID()
			return victim != 0
		})
		time.Sleep(150 * time.Millisecond)
	} else {
		// Between two batches: hold the flow's lock from the moment the
		// first batch releases it, so the second waits for it, having
		// begun nothing.
		waitFor("INSERT of a batch", func() bool { return insertPID() != 0 })
		conn, err := p.db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		lock := `hashtextextended('rwc.flow:daily', 0)`
		if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_lock(`+lock+`)`); err != nil {
			t.Fatal(err)
		}
		release = func() {
			if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(`+lock+`)`); err != nil {
				t.Fatal(err)
			}
		}
		waitFor("rwc waiting for the flow's lock", func() bool {
			err := p.db.QueryRow(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()
				AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> pg_backend_pid()`).Scan(&victim)
			if err != nil && err != sql.ErrNoRows {
				t.Fatal(err)
			}
			return err == nil
		})
		if n := p.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL
			AND application_name <> $2 AND pid <> $1`, victim, testApp); n != 0 {
			t.Fatalf("%d transactions open besides the lock wait: rwc is not between batches", n)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("rwc apply: %v, want killed:\n%s", err, buf.String())
	}
	// The backend outlives its client until it next talks to it: terminate
	// it (and any other of rwc's, should a batch have begun meanwhile).
	if victim == 0 {
		t.Fatal("no backend to terminate")
	}
	rwcBackends := `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
		AND backend_type = 'client backend' AND application_name <> '` + testApp + `'`
	p.exec(`SELECT pg_terminate_backend(pid) FROM (` + rwcBackends + `) b`)
	for n := 0; p.count(`SELECT count(*) FROM (`+rwcBackends+`) b`) != 0; n++ {
		if n > 1000 {
			t.Fatalf("rwc's backends still there: %v", p.rows(rwcBackends))
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	if n := p.count(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND d.datname = current_database()`); n != 0 {
		t.Fatalf("%d advisory locks held after the kill", n)
	}

	// What the kill left: the batches that committed, in the ledger, the
	// target and the event log alike; the killed batch left nothing.
	done := committed()
	if done < 1 || done > 4 {
		t.Fatalf("%d batches committed at the kill", done)
	}
	printed := batchesPrinted(buf.String())
	for i, b := range printed {
		if b != fmt.Sprint(i+1) || i >= done {
			t.Fatalf("killed apply printed batches %v with %d committed:\n%s", printed, done, buf.String())
		}
	}
	if n := p.count(`SELECT count(*) FROM rwc.events WHERE action = 'backfill' AND kind = 'planning_information'`); n != done {
		t.Fatalf("%d backfill events after the kill, want %d (one per committed batch)", n, done)
	}
	if n := p.count(`SELECT count(*) FROM rwc.backfill_batches WHERE committed_at IS NOT NULL AND batch > $1`, done); n != 0 {
		t.Fatalf("the committed batches are not the first %d", done)
	}
	if n := p.count(`SELECT count(*) FROM rwc.backfills WHERE finished_at IS NULL`); n != 1 {
		t.Fatalf("the backfill is not marked unfinished")
	}
	// The stale row is gone exactly when batch 2 (2020-01-03..04) committed.
	if got, want := p.count(`SELECT count(*) FROM daily WHERE k = 'stale'`), map[bool]int{true: 0, false: 1}[done >= 2]; got != want {
		t.Fatalf("%d stale rows with %d batches committed", got, done)
	}
	plan := p.rwc("plan")
	if !strings.Contains(plan, "» backfill pipelines/backfills/hist.yaml (daily): partial") {
		t.Fatalf("plan after the kill does not show the backfill partial:\n%s", plan)
	}
	status := p.rwc("status")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^  pipelines/backfills/hist\.yaml +daily +%d/5 .* not yet \(rwc apply resumes it\)`, done)).MatchString(status) {
		t.Fatalf("status after the kill does not show %d/5 batches, unfinished:\n%s", done, status)
	}
	before := p.rows(`SELECT batch, committed_at FROM rwc.backfill_batches WHERE committed_at IS NOT NULL`)

	// Resume: killed inside a batch, with the query fixed to be fast (the
	// flow's window is recomputed; the backfill file is unchanged); killed
	// between batches, with the same slow query.
	if inside {
		p.write("pipelines/p.yaml", daySpec(false))
	}
	out := p.rwc("apply", "--allow-dirty")
	var wantPrinted []string
	for b := done + 1; b <= 5; b++ {
		wantPrinted = append(wantPrinted, fmt.Sprint(b))
	}
	if got := batchesPrinted(out); strings.Join(got, ",") != strings.Join(wantPrinted, ",") {
		t.Fatalf("the resumed apply printed batches %v, want %v:\n%s", got, wantPrinted, out)
	}
	pgtest.SameRows(t, "batches committed before the kill, after the resume", p.rows(`SELECT batch, committed_at FROM rwc.backfill_batches WHERE batch <= $1`, done), before)
	pgtest.SameRows(t, "the ledger after the resume (vs an uninterrupted run)", p.rows(ledgerQuery), wantLedger)
	if n := p.count(`SELECT count(*) FROM rwc.backfill_batches WHERE committed_at IS NULL`); n != 0 {
		t.Fatalf("%d batches uncommitted after the resume", n)
	}
	// One backfill event per batch, each with its batch's predicate.
	pgtest.SameRows(t, "backfill events per batch",
		p.rows(fmt.Sprintf(`SELECT b.batch, count(e.id) FROM rwc.backfill_batches b
			LEFT JOIN rwc.events e ON e.action = 'backfill' AND e.kind = 'planning_information' AND %s = %s
			GROUP BY b.batch`, batchRange("e.predicate_cel", "d"), batchRange("b.predicate_cel", "d"))),
		[]string{"(1,1)", "(2,1)", "(3,1)", "(4,1)", "(5,1)"})
	if n := p.count(`SELECT count(*) FROM rwc.events WHERE action = 'backfill'`); n != 5 {
		t.Fatalf("%d backfill events, want 5", n)
	}
	pgtest.SameRows(t, "ledger totals", p.rows(`SELECT rows_deleted, rows_inserted, finished_at IS NOT NULL FROM rwc.backfills`),
		ref.totals)
	pgtest.SameRows(t, "target after the resume (vs an uninterrupted run)", p.rows(`SELECT * FROM daily`), want)
	if n := p.count(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND d.datname = current_database()`); n != 0 {
		t.Fatalf("%d advisory locks left behind", n)
	}
}

// concurrentApplies runs a second rwc apply while the first is in the
// backfill's first batch: they share the batches, each runs once.
func (h *e2e) concurrentApplies(t *testing.T) {
	ref := h.reference(t)
	p := h.newProj(t, false)
	seedKill(p, true)
	outs := make([]syncBuffer, 2)
	errs := make(chan error, 2)
	start := func(i int) {
		cmd := p.cmd("apply", "--allow-dirty")
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { errs <- cmd.Wait() }()
	}
	start(0)
	deadline := time.Now().Add(30 * time.Second)
	for p.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
		AND query LIKE 'INSERT INTO "public"."daily"%2020-01-%' AND pid <> pg_backend_pid()`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no backfill INSERT after 30s:\n%s", outs[0].String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	start(1)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("rwc apply: %v", err)
		}
	}
	// Which apply starts the backfill decides its batches (after a create
	// they leave out the window, after an incremental refresh they do not);
	// either way each batch runs exactly once.
	n := p.count(`SELECT count(*) FROM rwc.backfill_batches`)
	var want []string
	for b := 1; b <= n; b++ {
		want = append(want, fmt.Sprint(b))
	}
	sort.Strings(want)
	all := append(batchesPrinted(outs[0].String()), batchesPrinted(outs[1].String())...)
	sort.Strings(all)
	if n == 0 || strings.Join(all, ",") != strings.Join(want, ",") || t.Failed() {
		t.Fatalf("two applies printed batches %v, want each of the ledger's %d once:\n%s\n%s", all, n, outs[0].String(), outs[1].String())
	}
	if e := p.count(`SELECT count(*) FROM rwc.events WHERE action = 'backfill'`); e != n {
		t.Fatalf("%d backfill events, want %d", e, n)
	}
	pgtest.SameRows(t, "the ledger (vs one apply)", p.rows(ledgerQuery), ref.ledger)
	pgtest.SameRows(t, "ledger totals", p.rows(`SELECT rows_deleted, rows_inserted, finished_at IS NOT NULL FROM rwc.backfills`), ref.totals)
	pgtest.SameRows(t, "the target (vs one apply)", p.rows(`SELECT * FROM daily`), ref.target)
}

// batchRange is SQL reading a batch's range, {first,last}, from its CEL
// (d >= date('…') && d <= date('…') at its end, however parenthesised).
func batchRange(col, partition string) string {
	return `regexp_match(` + col + `, '([0-9-]{10})''\)+ && \(*` + partition + ` <= date\(''([0-9-]{10})''\)+$')`
}

// syncBuffer is a bytes.Buffer safe for a child's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clickstreamSpec is pipelines/clickstream.yaml, with the uniq_users metric
// when uniq is set.
func clickstreamSpec(uniq bool) string {
	col, expr := "", ""
	if uniq {
		col, expr = "\n      uniq_users: bigint", ", count(DISTINCT user_id) AS uniq_users"
	}
	return `# Page views per day. Events arrive up to two days late.
pipeline: clickstream
schema: analytics
tables:
  clickstream_daily:
    replace_where: event_date >= date_add(current_date(), -2)
    columns:
      event_date: date
      page: text
      views: bigint
      sessions: bigint` + col + `
    query: |
      SELECT event_date, page, count(*) AS views, count(DISTINCT session_id) AS sessions` + expr + `
      FROM clickstream_events
      GROUP BY event_date, page
`
}

// clickstream is the example end to end, with plain rwc apply (resolved at
// the real now, in UTC): 60 days of events, the history loaded by a
// backfill, then a uniq_users column added (filled for the window only) and
// backfilled for the 30 days before the window; older days keep NULL, and
// status says which days each column covers.
func (h *e2e) clickstream(t *testing.T) {
	// The window moves at midnight UTC: do not straddle it.
	if now := time.Now().UTC(); now.Add(time.Minute).Day() != now.Day() {
		time.Sleep(now.Truncate(24 * time.Hour).Add(24*time.Hour + time.Second).Sub(now))
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	day := func(n int) string { return today.AddDate(0, 0, -n).Format("2006-01-02") }

	p := h.newProj(t, true)
	p.exec(`CREATE TABLE clickstream_events (event_date date, page text, session_id text, user_id text)`)
	p.exec(`INSERT INTO clickstream_events SELECT $1::date - n, pg, 's' || (i % 3), 'u' || ((i + n) % (2 + n % 3))
		FROM generate_series(0, 59) n, (VALUES ('home'), ('cart')) v(pg), generate_series(1, 4 + n % 5) i`, day(0))
	// agg is what the flow computes, from the source.
	agg := func(cols, from, to string) []string {
		return p.rows(`SELECT event_date, page, `+cols+` FROM clickstream_events WHERE event_date BETWEEN $1 AND $2 GROUP BY 1, 2`, from, to)
	}
	target := func(cols, from, to string) []string {
		return p.rows(`SELECT event_date, page, `+cols+` FROM analytics.clickstream_daily WHERE event_date BETWEEN $1 AND $2`, from, to)
	}
	p.write("pipelines/clickstream.yaml", clickstreamSpec(false))
	p.commit("clickstream")
	p.rwc("apply")
	p.write("pipelines/backfills/history.yaml", fmt.Sprintf(`backfill: clickstream_daily
where: event_date >= date('%s') && event_date <= date('%s')
reason: load the history
`, day(59), day(0)))
	p.commit("load the history")
	out := p.rwc("apply")
	if !strings.Contains(out, "backfill pipelines/backfills/history.yaml (clickstream_daily): batch 2/2: ") {
		t.Fatalf("history backfill: want 2 batches of 30 days for 57 days:\n%s", out)
	}
	pgtest.SameRows(t, "the history", target("views, sessions", day(59), day(0)),
		agg("count(*), count(DISTINCT session_id)", day(59), day(0)))
	// The flow's refresh in that apply was incremental (nothing changed), so
	// the batches cover the window too: the second ends today and replaces
	// the window's 6 rows.
	pgtest.SameRows(t, "the history's batches", p.rows(`SELECT batch, `+batchRange("predicate_cel", "event_date")+`, rows_deleted, rows_inserted
		FROM rwc.backfill_batches WHERE path = 'pipelines/backfills/history.yaml'`),
		[]string{fmt.Sprintf("(1,\"{%s,%s}\",0,60)", day(59), day(30)), fmt.Sprintf("(2,\"{%s,%s}\",6,60)", day(29), day(0))})

	// The new metric: the window is recomputed with it; older rows keep NULL.
	p.write("pipelines/clickstream.yaml", clickstreamSpec(true))
	p.commit("uniq_users")
	if plan := p.rwc("plan", "--format", "json"); !strings.Contains(plan, `"action": "recompute_window"`) ||
		!strings.Contains(plan, `"column_added:uniq_users"`) {
		t.Fatalf("the plan does not recompute the window for uniq_users:\n%s", plan)
	}
	out = p.rwc("apply")
	if !regexp.MustCompile(`(?m)^clickstream_daily +recompute_window \(QUERY_CHANGED\): 6 deleted, 6 inserted`).MatchString(out) {
		t.Fatalf("apply of uniq_users:\n%s", out)
	}
	pgtest.SameRows(t, "uniq_users in the window", target("views, sessions, uniq_users", day(2), day(0)),
		agg("count(*), count(DISTINCT session_id), count(DISTINCT user_id)", day(2), day(0)))
	pgtest.SameRows(t, "days with uniq_users before the backfill",
		p.rows(`SELECT DISTINCT event_date::text FROM analytics.clickstream_daily WHERE uniq_users IS NOT NULL`),
		[]string{"(" + day(2) + ")", "(" + day(1) + ")", "(" + day(0) + ")"})
	if n := p.count(`SELECT count(*) FROM analytics.clickstream_daily WHERE uniq_users IS NULL`); n != 57*2 {
		t.Fatalf("%d rows with uniq_users NULL, want %d", n, 57*2)
	}

	// The backfill: the 30 days before the window, in batches of 10.
	from, to := day(32), day(3)
	out = p.rwc("backfill", "new", "clickstream_daily", "--where",
		fmt.Sprintf("event_date >= date('%s') && event_date <= date('%s')", from, to),
		"--reason", "fill uniq_users for the 30 days before the window", "--batch", "10")
	file := "pipelines/backfills/" + time.Now().UTC().Format("2006-01-02") + "-clickstream_daily.yaml"
	if out != "wrote "+file+": commit it; the next rwc apply runs it once\n" {
		t.Fatalf("rwc backfill new: %q, want it to write %s", out, file)
	}
	p.commit("backfill uniq_users")
	plan := p.rwc("plan")
	for _, want := range []string{
		"» backfill " + file + " (clickstream_daily): pending",
		"recomputes: [" + from + ", " + to + "]",
		"» backfill pipelines/backfills/history.yaml (clickstream_daily): applied",
	} {
		if !strings.Contains(plan, want) {
			t.Fatalf("plan lacks %q:\n%s", want, plan)
		}
	}
	out = p.rwc("apply")
	if got := regexp.MustCompile(`(?m)^backfill `+regexp.QuoteMeta(file)+` \(clickstream_daily\): batch (\d)/3: 20 deleted, 20 inserted in [0-9.]+(?:ms|s|µs)$`).FindAllString(out, -1); len(got) != 3 {
		t.Fatalf("apply of the backfill: want 3 batches of 10 days (20 rows each):\n%s", out)
	}
	if strings.Contains(out, "history.yaml") {
		t.Fatalf("the history backfill ran again:\n%s", out)
	}
	pgtest.SameRows(t, "the backfilled days and the window", target("views, sessions, uniq_users", from, day(0)),
		agg("count(*), count(DISTINCT session_id), count(DISTINCT user_id)", from, day(0)))
	pgtest.SameRows(t, "older days", target("views, sessions, uniq_users", day(59), day(33)),
		agg("count(*), count(DISTINCT session_id), NULL::bigint", day(59), day(33)))

	// status: per column, the days it was computed for.
	status := p.rwc("status")
	for _, want := range []string{
		"clickstream_daily columns filled for:\n" +
			"  event_date, page, views, sessions: [" + day(59) + ", +∞)\n" +
			"  uniq_users: [" + from + ", +∞)\n",
		"  pipelines/backfills/history.yaml ",
		"  " + file + " ",
	} {
		if !strings.Contains(status, want) {
			t.Fatalf("status lacks %q:\n%s", want, status)
		}
	}
}

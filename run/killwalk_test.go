package run_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/run/pgtest/cutproxy"
	"github.com/rwc-dev/rwc/run/session"
)

// The kill walk (issue #13): each scenario's rwc command runs once uncut
// through a cutproxy, which counts its M statement boundaries (simple
// queries and Syncs, across all its connections), and then once for each
// cut point N of 1..M: the proxy passes the first N on, cuts every
// connection and refuses new ones, and the test SIGKILLs rwc, which dies
// as if at that statement. After each cut:
//
//   - the database (its relations by name, every target's columns and
//     rows, and rwc's state: flows, fingerprints, the backfill ledger, the
//     event log, deployments, without the columns volatileState leaves
//     out; see readSnapshot) equals what it was at
//     one of the uncut run's boundaries (the test read it there, holding
//     the boundary back): the cut left what a prefix of rwc's commits left,
//     state and targets together. So each target is its before or its
//     after state, or, for a batched backfill, what a prefix of its batches
//     leaves (the uncut run is checked to have shown readers nothing else:
//     a flow's target, its rwc.flows row, fingerprints and events change
//     together, in one commit);
//   - no advisory lock is held, and the next plain `rwc apply`
//     (--lock-timeout 2s) succeeds at once, and so does one more after a
//     change of the sources; they leave the targets and the state as they
//     leave them after an uncut run, or, when the cut left the database as
//     before, after no run at all (the two differ for refresh --full, which
//     apply does not do). See next.
//
// Windows are fixed dates (date('2026-03-05')), not current_date(): rwc
// apply has no --at, and every run must resolve the same windows. Counts
// are taken at run time, never written down: a change of rwc's statements
// changes M, not the test. rwc probes beside a refresh on a second
// connection, so the order of boundaries across connections, and M itself,
// can vary a little from run to run; a cut run that ends before its N is
// checked as an uncut one.
//
// RWC_KILLWALK=all walks every N of every scenario (make soak); by default
// each scenario walks RWC_KILLWALK_POINTS (default 12) cut points spread
// over 1..M, plus each COMMIT and the boundary before it, and the first
// boundary of each statement writing a target (see points).
func TestKillWalk(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	for _, sc := range walkScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			newWalk(t, sc).walk(t)
		})
	}
}

// walkScenario is one command to cut, and the database it runs on.
type walkScenario struct {
	name string
	// targets are the tables to compare, schema-qualified.
	targets []string
	// seed is SQL run on an empty database; then, unless fresh, the
	// setup apply of setupSpecs (default specs) runs, uncut.
	seed       string
	fresh      bool
	setupSpecs map[string]string
	// after the setup apply, before the command
	between string
	// specs are the files the command (and the next apply) runs.
	specs map[string]string
	// args is the command, with DIR for the specs' directory.
	args []string
	// batched: the command commits more than once for one target (a
	// backfill's batches), so a target may be left between before and after.
	batched bool
	// columnsFirst: the target's column changes commit on their own before
	// the refresh (readers must not wait for the recompute), so a target
	// may be left with its rows as before under the new columns, the state
	// saying so.
	columnsFirst bool
	// check looks at the uncut run's result (its database), to show the
	// scenario is what it claims.
	check func(t *testing.T, db *sql.DB)
}

// walkSeed is ev(d, k, v): two rows a day, 2026-03-01..10 (seedDaily's).
const walkSeed = `CREATE TABLE ev (d date, k text, v integer);
	INSERT INTO ev SELECT d::date, k, CASE k WHEN 'a' THEN extract(day FROM d)::int ELSE 10 * extract(day FROM d)::int END
	FROM generate_series(DATE '2026-03-01', DATE '2026-03-10', interval '1 day') d, (VALUES ('a'), ('b')) k(k)`

// walkChange changes ev inside and outside the windows: an update, an
// insert, a delete.
const walkChange = `UPDATE ev SET v = v + 100 WHERE d IN ('2026-03-06', '2026-03-02');
	INSERT INTO ev VALUES ('2026-03-09', 'c', 7), ('2026-03-01', 'c', 8);
	DELETE FROM ev WHERE d = '2026-03-08' AND k = 'a'`

// copySpec copies ev into t with the window d >= 2026-03-05, plus extra
// spec lines under the table.
func copySpec(extra, cols, query string) string {
	return `pipeline: p
tables:
  t:
    replace_where: d >= date('2026-03-05')
` + extra + `    columns:
      d: date
      k: text
      v: integer
` + cols + `    query: |
      ` + query + `
`
}

var plainCopy = copySpec("", "", "SELECT d, k, v FROM ev")

// partCopy is plainCopy into a target partitioned by day, its window
// bounded above (rwc apply has no --at: an open window would reach today
// and beyond).
func partCopy(interval, query string) string {
	return strings.Replace(copySpec("    partitioning: {by: d, interval: "+interval+"}\n", "", query),
		"d >= date('2026-03-05')", "d >= date('2026-03-05') && d <= date('2026-03-12')", 1)
}

// histBackfill recomputes six days before the window, in three batches.
const histBackfill = `backfill: t
where: d >= date('2026-02-27') && d <= date('2026-03-04')
reason: recompute the first days of March
batch: 2d
`

// events is a check that the uncut run logged these flow/action pairs last.
func events(want ...string) func(t *testing.T, db *sql.DB) {
	return func(t *testing.T, db *sql.DB) {
		t.Helper()
		got := pgtest.Rows(t, db, fmt.Sprintf(`SELECT flow, action FROM rwc.events
			WHERE id > (SELECT max(id) FROM rwc.events) - %d`, len(want)))
		for i, fa := range want {
			flow, action, _ := strings.Cut(fa, " ")
			want[i] = "(" + flow + "," + action + ")"
		}
		pgtest.SameRows(t, "the uncut run's last events", got, sortedCopy(want))
	}
}

var walkScenarios = []walkScenario{
	{
		// Everything from nothing: the state schema's migrations too.
		name:    "first create",
		targets: []string{"public.t"},
		seed:    walkSeed,
		fresh:   true,
		specs:   map[string]string{"p.yaml": plainCopy},
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("t create"),
	},
	{
		// b reads a's target; neither can be refreshed incrementally (the
		// predicate column is computed), so both recompute their windows.
		name:    "window refresh of two dependent flows",
		targets: []string{"public.a", "public.b"},
		seed:    walkSeed,
		specs: map[string]string{"p.yaml": `pipeline: p
tables:
  a:
    replace_where: d >= date('2026-03-05')
    columns:
      d: date
      k: text
      v: integer
    query: |
      SELECT d + 0 AS d, k, v FROM ev
  b:
    replace_where: d >= date('2026-03-06')
    columns:
      d: date
      n: bigint
      total: bigint
    query: |
      SELECT d + 0 AS d, count(*) AS n, sum(v) AS total FROM a GROUP BY d
`},
		between: walkChange + `; INSERT INTO a VALUES ('2026-01-01', 'dml', 1)`,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("a recompute_window", "b recompute_window"),
	},
	{
		name:    "incremental refresh",
		targets: []string{"public.t"},
		seed:    walkSeed,
		specs:   map[string]string{"p.yaml": copySpec("    partition_by: d\n", "", "SELECT d, k, v FROM ev")},
		between: walkChange,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("t incremental"),
	},
	{
		// capture: triggers: the setup apply installed them after its
		// refresh; this one reads them, probes (they vouch for nothing
		// yet), stores what they vouch for, then clears the change log.
		name:    "incremental refresh capturing by triggers",
		targets: []string{"public.t"},
		seed:    walkSeed,
		specs:   map[string]string{"p.yaml": copySpec("    partition_by: d\n    capture: triggers\n", "", "SELECT d, k, v FROM ev")},
		between: walkChange,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check: func(t *testing.T, db *sql.DB) {
			events("t incremental")(t, db)
			if n := pgtest.Rows(t, db, `SELECT relation FROM rwc.captures WHERE flow = 't'`); len(n) != 2 {
				t.Errorf("captures %v, want ev's and t's", n)
			}
		},
	},
	{
		// Three batches of two days, each its own transaction, and a row
		// written into the target that the second replaces.
		name:       "batched backfill",
		targets:    []string{"public.t"},
		seed:       walkSeed,
		setupSpecs: map[string]string{"p.yaml": plainCopy}, // the backfill is the command's
		between:    walkChange + `; INSERT INTO t VALUES ('2026-03-03', 'stale', 999), ('2026-02-01', 'keep', 1)`,
		specs:      map[string]string{"p.yaml": plainCopy, "backfills/hist.yaml": histBackfill},
		args:       []string{"apply", "--allow-dirty", "DIR"},
		batched:    true,
		check: func(t *testing.T, db *sql.DB) {
			if n := pgtest.Count(t, db, `SELECT count(*) FROM rwc.backfill_batches WHERE committed_at IS NOT NULL`); n != 3 {
				t.Fatalf("the uncut backfill committed %d batches, want 3", n)
			}
		},
	},
	{
		// Expectations checked after the write and before the commit (a
		// warning among them, so that all of them run): a kill at any of
		// their statements leaves the target as before.
		name:    "incremental refresh with expectations",
		targets: []string{"public.t"},
		seed:    walkSeed,
		specs: map[string]string{"p.yaml": strings.Replace(copySpec("    partition_by: d\n", "", "SELECT d, k, v FROM ev"), "    columns:", `    expect:
      positive:
        check: v >= 0
      keyed:
        unique: [d, k]
        across_table: true
      steady:
        rows: {min: 1, max_change: 10%}
        severity: warn
    columns:`, 1)},
		between: walkChange,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check: func(t *testing.T, db *sql.DB) {
			events("t incremental")(t, db)
			if got := pgtest.Rows(t, db, `SELECT name, passed FROM rwc.expectation_results ORDER BY name`); fmt.Sprint(got) != "[(keyed,t) (positive,t) (steady,f)]" {
				t.Fatalf("the uncut run's expectations: %v", got)
			}
		},
	},
	{
		// Rows outside the window (DML) are lost by --full, kept by apply.
		name:    "refresh --full",
		targets: []string{"public.t"},
		seed:    walkSeed,
		between: walkChange + `; INSERT INTO t VALUES ('2026-01-01', 'dml', 1)`,
		specs:   map[string]string{"p.yaml": plainCopy},
		args:    []string{"refresh", "t", "--full", "--yes", "--allow-dirty", "--specs", "DIR"},
		check:   events("t full_refresh"),
	},
	{
		// Partitions made, the window's staged and swapped in.
		name:    "partitioned first create",
		targets: []string{"public.t"},
		seed:    walkSeed,
		fresh:   true,
		specs:   map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("t create"),
	},
	{
		// The changed days' partitions swapped, the others kept.
		name:    "partitioned incremental swap",
		targets: []string{"public.t"},
		seed:    walkSeed,
		specs:   map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		between: walkChange,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("t incremental"),
	},
	{
		// Every partition of the window swapped.
		name:       "partitioned whole-window swap",
		targets:    []string{"public.t"},
		seed:       walkSeed,
		setupSpecs: map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		between:    walkChange + `; INSERT INTO t VALUES ('2026-03-06', 'dml', 1)`,
		specs:      map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v + 1 AS v FROM ev")},
		args:       []string{"apply", "--allow-dirty", "DIR"},
		check:      events("t recompute_window"),
	},
	{
		// Beside a DEFAULT partition, the missing partition made and
		// committed first (an empty one: the rows as before), then the
		// refresh.
		name:       "partitioned, partitions made first",
		targets:    []string{"public.t"},
		seed:       walkSeed,
		setupSpecs: map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		between:    walkChange + `; CREATE TABLE t_default PARTITION OF t DEFAULT; DROP TABLE t_p20260306`,
		specs:      map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		args:       []string{"apply", "--allow-dirty", "DIR"},
		check: func(t *testing.T, db *sql.DB) {
			if n := pgtest.Count(t, db, `SELECT count(*) FROM pg_inherits WHERE inhrelid = 't_p20260306'::regclass`); n != 1 {
				t.Fatalf("the uncut refresh left t_p20260306 a partition %d times, want once", n)
			}
		},
	},
	{
		// Monthly partitions: the window cuts March, deleted and inserted.
		name:    "partitioned cut boundary",
		targets: []string{"public.t"},
		seed:    walkSeed,
		specs:   map[string]string{"p.yaml": partCopy("month", "SELECT d, k, v FROM ev")},
		between: walkChange + `; INSERT INTO t VALUES ('2026-03-01', 'dml', 1)`,
		args:    []string{"apply", "--allow-dirty", "DIR"},
		check:   events("t incremental"),
	},
	{
		// Batches of history outside the window, each creating its days'
		// partitions and swapping them in.
		name:       "partitioned batched backfill",
		targets:    []string{"public.t"},
		seed:       walkSeed,
		setupSpecs: map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev")},
		between:    walkChange,
		specs:      map[string]string{"p.yaml": partCopy("day", "SELECT d, k, v FROM ev"), "backfills/hist.yaml": histBackfill},
		args:       []string{"apply", "--allow-dirty", "DIR"},
		batched:    true,
		check: func(t *testing.T, db *sql.DB) {
			if n := pgtest.Count(t, db, `SELECT count(*) FROM rwc.events WHERE action = 'backfill' AND details ? 'swapped'`); n != 3 {
				t.Fatalf("the uncut backfill swapped partitions in %d batches, want 3", n)
			}
			pgtest.SameRows(t, "the backfilled days", pgtest.Rows(t, db, `SELECT d, k, v FROM t WHERE d < '2026-03-05'`),
				pgtest.Rows(t, db, `SELECT d, k, v FROM ev WHERE d < '2026-03-05'`))
		},
	},
	{
		// maintain: immediate switched on: the refresh installs the
		// source's function and triggers in its own transaction, so the
		// flow is left unmaintained with its target as before, or
		// maintained with it as after (the snapshot holds the triggers);
		// the next applies' change of ev goes through them.
		name:       "incremental refresh switching to maintain: immediate",
		targets:    []string{"public.t"},
		seed:       walkSeed,
		setupSpecs: map[string]string{"p.yaml": copySpec("    partition_by: d\n", "", "SELECT d, k, v FROM ev")},
		between:    walkChange,
		specs:      map[string]string{"p.yaml": copySpec("    partition_by: d\n    maintain: immediate\n", "", "SELECT d, k, v FROM ev")},
		args:       []string{"apply", "--allow-dirty", "DIR"},
		check: func(t *testing.T, db *sql.DB) {
			events("t incremental")(t, db)
			if n := pgtest.Count(t, db, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'ev'::regclass AND tgname LIKE 'rwc\_maintain\_%' AND tgenabled = 'O'`); n != 5 {
				t.Errorf("the uncut apply left %d of rwc's maintenance triggers on ev, want 5", n)
			}
		},
	},
	{
		name:         "column add",
		targets:      []string{"public.t"},
		seed:         walkSeed,
		setupSpecs:   map[string]string{"p.yaml": plainCopy},
		between:      walkChange + `; INSERT INTO t VALUES ('2026-01-01', 'dml', 1)`,
		specs:        map[string]string{"p.yaml": copySpec("", "      w: integer\n", "SELECT d, k, v, v * 2 AS w FROM ev")},
		args:         []string{"apply", "--allow-dirty", "DIR"},
		columnsFirst: true,
		check:        events("t recompute_window"),
	},
}

// walk is one scenario's databases: the hub (pgtest's, from which the
// others are created and dropped) and the set-up template every run copies.
type walk struct {
	sc       walkScenario
	hub      *sql.DB
	hubDSN   string
	template string
	dir      string // the command's specs
	seq      atomic.Int64
}

func newWalk(t *testing.T, sc walkScenario) *walk {
	hub, hubDSN := pgtest.DB(t)
	w := &walk{sc: sc, hub: hub, hubDSN: hubDSN, dir: writeSpecs(t, sc.specs)}
	// The template: seeded, applied (all but a first create), changed.
	name, dsn, _ := w.create(t, "")
	db := openDB(t, dsn)
	pgtest.Exec(t, db, sc.seed)
	if !sc.fresh {
		setup := w.dir
		if sc.setupSpecs != nil {
			setup = writeSpecs(t, sc.setupSpecs)
		}
		if code, out := runRWC(t, dsn, "apply", "--allow-dirty", setup); code != 0 {
			t.Fatalf("setup apply exited %d:\n%s", code, out)
		}
	}
	if sc.between != "" {
		pgtest.Exec(t, db, sc.between)
	}
	db.Close()
	w.template = name
	return w
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := session.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// create makes a database, a copy of template when one is given; drop
// drops it (at the latest when the test ends).
func (w *walk) create(t *testing.T, template string) (name, dsn string, drop func()) {
	t.Helper()
	var hubName string
	if err := w.hub.QueryRow(`SELECT current_database()`).Scan(&hubName); err != nil {
		t.Fatal(err)
	}
	name = fmt.Sprintf("%.50s_%d", hubName, w.seq.Add(1))
	q := "CREATE DATABASE " + pq.QuoteIdentifier(name)
	if template != "" {
		q += " TEMPLATE " + pq.QuoteIdentifier(template)
	}
	pgtest.Exec(t, w.hub, q)
	var once sync.Once
	drop = func() {
		once.Do(func() {
			if _, err := w.hub.Exec("DROP DATABASE " + pq.QuoteIdentifier(name) + " WITH (FORCE)"); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(drop)
	u, err := url.Parse(w.hubDSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return name, u.String(), drop
}

// walkRun is what one run of the command left.
type walkRun struct {
	cut     bool // the proxy cut it (else it ran to its end)
	count   int  // boundaries passed on
	log     []cutproxy.Boundary
	before  []string   // the database before the command
	after   []string   // after the command (the cut, or its end)
	seen    [][]string // uncut run: the database at each boundary, when it could be read
	blocked int        // uncut run: boundaries at which a lock rwc held kept the test from reading
	final   []string   // after the next applies (see next)
	output  string
}

// run copies the template and runs the command through a proxy cutting
// after cutAfter boundaries (0: never; then the database is also read at
// each boundary), then the next plain apply.
func (w *walk) run(t *testing.T, cutAfter int, cutWhen func(cutproxy.Boundary) bool) walkRun {
	t.Helper()
	_, dsn, drop := w.create(t, w.template)
	defer drop()
	db := openDB(t, dsn)
	defer db.Close()
	r := walkRun{before: w.snapshot(t, db)}
	opts := cutproxy.Options{CutAfter: cutAfter, CutWhen: cutWhen}
	uncut := cutAfter == 0 && cutWhen == nil
	var snapErr error
	if uncut {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// An AccessExclusive lock rwc holds would block the read for ever:
		// that boundary is not read.
		if _, err := conn.ExecContext(context.Background(), `SET lock_timeout = '200ms'`); err != nil {
			t.Fatal(err)
		}
		opts.Before = func(cutproxy.Boundary) {
			s, err := readSnapshot(conn, w.sc.targets)
			var pqErr *pq.Error
			switch {
			case errors.As(err, &pqErr) && pqErr.Code == "55P03":
				r.blocked++
			case err != nil:
				snapErr = errors.Join(snapErr, err)
			default:
				r.seen = append(r.seen, s)
			}
		}
	}
	p, pdsn := proxied(t, dsn, opts)
	defer p.Close()
	args := slices.Clone(w.sc.args)
	for i, a := range args {
		if a == "DIR" {
			args[i] = w.dir
		}
	}
	cmd := rwcCmd(t, pdsn, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var exitErr error
	select {
	case <-p.Cut():
		// rwc dies at that statement: nothing more of it happens.
		r.cut = true
		cmd.Process.Kill()
		<-exited
	case exitErr = <-exited:
		select {
		case <-p.Cut(): // it died of the cut before the test saw it
			r.cut = true
		default:
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("rwc %v did not end in 2 minutes:\n%s", w.sc.args, out.String())
	}
	r.output = out.String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitGone(ctx, db); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := errors.Join(p.Err(), snapErr); err != nil {
		t.Fatal(err)
	}
	r.count, r.log = p.Count(), p.Log()
	if !r.cut && exitErr != nil {
		t.Fatalf("rwc %v (cut after %d of %d) exited without being cut: %v\n%s", w.sc.args, cutAfter, r.count, exitErr, r.output)
	}
	r.after = w.snapshot(t, db)
	if uncut {
		w.sc.check(t, db)
	}
	if n := pgtest.AdvisoryLocks(t, db); n != 0 {
		t.Fatalf("%d advisory locks held after rwc is gone", n)
	}
	r.final = w.next(t, db, dsn, fmt.Sprintf("N=%d (cut after %v)", cutAfter, r.lastBoundary()))
	return r
}

// walkLater changes ev inside the windows, for the apply after the next.
const walkLater = `UPDATE ev SET v = v + 1000 WHERE d = '2026-03-07';
	INSERT INTO ev VALUES ('2026-03-10', 'z', 5)`

// next runs the next plain apply, which must succeed at once (no lock
// left, nothing to repair first), and then another after a change of the
// sources: the state the cut left must agree with the targets, or that
// apply (incremental where it can be) would compute them wrong. It returns
// the targets and the state (without the logs and the fingerprints, whose
// form depends on the path taken) after each.
func (w *walk) next(t *testing.T, db *sql.DB, dsn, what string) []string {
	t.Helper()
	var out []string
	for i, change := range []string{"", walkLater} {
		if change != "" {
			pgtest.Exec(t, db, change)
		}
		code, o := runRWC(t, dsn, "apply", "--allow-dirty", "--lock-timeout", "2s", w.dir)
		if code != 0 {
			t.Fatalf("%s: apply %d after it exited %d:\n%s", what, i+1, code, o)
		}
		for _, l := range finalView(w.snapshot(t, db)) {
			out = append(out, fmt.Sprintf("apply %d: %s", i+1, l))
		}
	}
	return out
}

// lastBoundary is the last boundary passed on.
func (r walkRun) lastBoundary() cutproxy.Boundary {
	if len(r.log) == 0 {
		return cutproxy.Boundary{}
	}
	return r.log[len(r.log)-1]
}

// walk runs the scenario uncut, then cut at each N of the walk.
func (w *walk) walk(t *testing.T) {
	ref := w.run(t, 0, nil)
	m := ref.count
	if m == 0 {
		t.Fatal("the uncut run sent no statement through the proxy")
	}
	if slices.Equal(ref.before, ref.after) {
		t.Fatal("the uncut run changed nothing")
	}
	// What the next apply leaves when the cut left the database as before.
	_, beforeDSN, drop := w.create(t, w.template)
	db := openDB(t, beforeDSN)
	finalBefore := w.next(t, db, beforeDSN, "instead of the command")
	db.Close()
	drop()

	// The states the uncut run went through, the one it ended in last.
	allowed := append(slices.Clone(ref.seen), ref.after)
	flowStates := map[string][]string{}
	for _, s := range allowed {
		for flow, lines := range flowParts(s, w.sc.targets) {
			if !slices.Contains(flowStates[flow], lines) {
				flowStates[flow] = append(flowStates[flow], lines)
			}
		}
	}
	// The comparison sees a torn target: the after state short of one row
	// is none of the allowed states.
	torn := slices.Clone(ref.after)
	if i := slices.IndexFunc(torn, func(l string) bool { return strings.HasPrefix(l, w.sc.targets[0]+" (") }); i >= 0 {
		torn = slices.Delete(torn, i, i+1)
	}
	if slices.ContainsFunc(allowed, func(s []string) bool { return slices.Equal(s, torn) }) {
		t.Fatal("a torn target passes for one of the uncut run's states")
	}
	if !w.sc.batched {
		// Readers of the uncut run saw each flow's target, its state and
		// its events before or after, together, never anything between.
		want := 2
		if w.sc.columnsFirst {
			want = 3 // and between them, the old rows under the new columns
		}
		for flow, states := range flowStates {
			if len(states) != want {
				t.Errorf("flow %s went through %d states in the uncut run, want %d (before, after):\n%s", flow, len(states), want, strings.Join(states, "\n"))
			}
		}
	}
	if os.Getenv("RWC_KILLWALK_LOG") != "" {
		for _, b := range ref.log {
			t.Log(b)
		}
	}
	points := w.points(m, ref.log)
	t.Logf("%d boundaries (%d of them with the targets or the state locked against readers); cutting after %d of them",
		m, ref.blocked, len(points))
	outcomes := map[string]int{}
	var rolledBack bool
	for _, n := range points {
		r := w.run(t, n, nil)
		if !r.cut {
			// The run sent fewer than n (its connections interleave
			// differently from run to run): it ran to its end.
			outcomes["uncut"]++
			pgtest.SameRows(t, fmt.Sprintf("N=%d (ran to its end): the database", n), r.after, ref.after)
			pgtest.SameRows(t, fmt.Sprintf("N=%d (ran to its end): after the next apply", n), r.final, ref.final)
			continue
		}
		last := r.lastBoundary()
		if !slices.ContainsFunc(allowed, func(s []string) bool { return slices.Equal(s, r.after) }) {
			t.Fatalf("N=%d (cut after %v): the database is in none of the uncut run's states:\n got\n  %s\n before\n  %s\n after\n  %s",
				n, last, strings.Join(r.after, "\n  "), strings.Join(ref.before, "\n  "), strings.Join(ref.after, "\n  "))
		}
		if w.wroteInOpenTransaction(r.log) && maps.Equal(splitTargets(r.after, w.sc.targets), splitTargets(ref.before, w.sc.targets)) {
			rolledBack = true
		}
		outcome := "after"
		switch {
		case slices.Equal(r.after, ref.before):
			outcome = "before"
		case !slices.Equal(r.after, ref.after):
			outcome = "between"
		}
		outcomes[outcome]++
		// From before, the next apply does what the command would have
		// done, or (refresh --full) what apply does instead; from after,
		// what it does after the command; from a state between the two
		// (an apply's refreshes committed, its deployment not yet), either.
		what := fmt.Sprintf("N=%d (cut after %v, left %s): after the next applies", n, last, outcome)
		switch {
		case outcome == "before":
			pgtest.SameRows(t, what, r.final, finalBefore)
		case outcome == "after" || !slices.Equal(r.final, finalBefore):
			pgtest.SameRows(t, what, r.final, ref.final)
		}
	}
	if !rolledBack {
		// A run's numbering moves with its statements on other connections
		// (the probes, a swap's count on a connection of its own or not),
		// so the points above can all miss the span between a write and its
		// commit: cut once right after the first write of a target, by its
		// text.
		r := w.run(t, 0, func(b cutproxy.Boundary) bool { return w.writesTarget(b.SQL) })
		rolledBack = r.cut && w.wroteInOpenTransaction(r.log) && maps.Equal(splitTargets(r.after, w.sc.targets), splitTargets(ref.before, w.sc.targets))
		outcomes["cut at the first write"]++
	}
	t.Logf("outcomes: %v", outcomes)
	// The walk must see the cut undo and keep work: both outcomes, and a
	// cut inside a transaction that had written a target, which left the
	// targets as before.
	if outcomes["before"] == 0 || outcomes["after"]+outcomes["uncut"] == 0 {
		t.Fatalf("the walk saw outcomes %v: want both before and after", outcomes)
	}
	if !rolledBack {
		t.Fatalf("no cut after a statement writing a target, in its transaction, left the targets as before: the proxy did not cut inside a transaction")
	}
	if w.sc.batched && outcomes["between"] == 0 {
		t.Fatalf("no cut left the backfill between its batches")
	}
}

// points are the cut points to walk: all of 1..m+2 with RWC_KILLWALK=all,
// else RWC_KILLWALK_POINTS (default 12) spread over them, plus each COMMIT
// and the boundary before it (the ambiguous commit, and the last step
// before it), each first boundary of a statement writing a target, and the
// last ones.
func (w *walk) points(m int, log []cutproxy.Boundary) []int {
	if os.Getenv("RWC_KILLWALK") == "all" {
		// and a little past m, for runs that send more than the uncut one
		out := make([]int, m+2)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	k := 12
	if v, err := strconv.Atoi(os.Getenv("RWC_KILLWALK_POINTS")); err == nil && v > 0 {
		k = v
	}
	// The last boundaries too, past m: a run may send one or two more or
	// fewer than the uncut one (probes run beside the refresh), and a cut
	// after its last statement is the "after" the walk must see.
	set := map[int]bool{1: true, m - 1: true, m: true, m + 1: true, m + 2: true}
	for i := 0; i < k; i++ {
		set[1+i*(m-1)/max(k-1, 1)] = true
	}
	prev := ""
	for _, b := range log {
		if strings.EqualFold(strings.TrimSpace(b.SQL), "COMMIT") {
			set[b.N] = true
			set[b.N-1] = true
		}
		// And either side: a run's statements on other connections (the
		// probes beside the write) may shift its numbering by one.
		if w.writesTarget(b.SQL) && b.SQL != prev {
			set[b.N-1], set[b.N], set[b.N+1] = true, true, true
		}
		// Each expectation's check, which runs after the write and
		// before the commit.
		if strings.Contains(b.SQL, "\n) AS w") {
			set[b.N] = true
		}
		prev = b.SQL
	}
	out := []int{}
	for n := range set {
		if n >= 1 && n <= m+2 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// writesTarget reports whether q deletes from or inserts into a target.
func (w *walk) writesTarget(q string) bool {
	for _, tab := range w.sc.targets {
		schema, name, _ := strings.Cut(tab, ".")
		quoted := pq.QuoteIdentifier(schema) + "." + pq.QuoteIdentifier(name)
		for _, verb := range []string{"DELETE FROM ", "INSERT INTO ", "TRUNCATE ", "ALTER TABLE "} {
			if strings.Contains(q, verb+quoted) {
				return true
			}
		}
	}
	return false
}

// wroteInOpenTransaction reports whether a statement after the log's last
// COMMIT wrote a target: the cut came inside a transaction that had.
func (w *walk) wroteInOpenTransaction(log []cutproxy.Boundary) bool {
	for i := len(log) - 1; i >= 0 && !strings.EqualFold(strings.TrimSpace(log[i].SQL), "COMMIT"); i-- {
		if w.writesTarget(log[i].SQL) {
			return true
		}
	}
	return false
}

// The columns of rwc's state a snapshot leaves out: they differ from run to
// run whatever happened (times, durations, serial ids, oids, the
// fingerprints' hashes of row versions, vacuum bookkeeping).
var volatileState = map[string]bool{
	"id": true, "duration_ms": true, "dead_rows": true, "vacuums": true, "h": true,
	// capture: triggers: transactions, snapshots, catalog row versions, oids
	"xid": true, "snapshot": true, "writer": true, "token": true, "relid": true,
}

// logTables are rwc's logs, which a run adds to however often it runs, and
// the fingerprints, a cache whose form depends on the refreshes that wrote
// it (a create's "rewritten" marker, an incremental refresh's partitions).
// The change log and what triggers vouch for are of the same kind.
var logTables = []string{"rwc.events", "rwc.deployments", "rwc.fingerprints", "rwc.change_log", "rwc.change_values", "rwc.captures"}

// snapshot reads the database (see readSnapshot), failing the test on an
// error.
func (w *walk) snapshot(t *testing.T, db *sql.DB) []string {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := readSnapshot(conn, w.sc.targets)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readSnapshot is the database as lines, sorted: its relations, each
// target's columns and rows (or its absence), and every row of every table of rwc's state
// without its volatile columns, each line starting with the table's name.
// It is read in one repeatable-read transaction.
func readSnapshot(conn *sql.Conn, targets []string) ([]string, error) {
	ctx := context.Background()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	state, err := textColumn(ctx, tx, `SELECT 'rwc.' || relname FROM pg_class
		WHERE relnamespace = to_regnamespace('rwc') AND relkind = 'r'`)
	if err != nil {
		return nil, err
	}
	// Every relation by name, so that one a cut leaves behind (a shadow
	// table, an index) shows.
	lines, err := textColumn(ctx, tx, `SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg_temp%'
		AND n.nspname NOT LIKE 'pg_toast_temp%' AND c.relkind IN ('r', 'p', 'v', 'm', 'i', 'S')`)
	if err != nil {
		return nil, err
	}
	// maintain: immediate's functions and triggers, which must come and
	// go with the refresh that installs them.
	maint, err := textColumn(ctx, tx, `SELECT 'maintenance ' || p.proname || ' ' || md5(p.prosrc) || coalesce(' ' || c.relname || ' ' || t.tgname || ' ' || t.tgenabled::text, '')
		FROM pg_proc p LEFT JOIN pg_trigger t ON t.tgfoid = p.oid LEFT JOIN pg_class c ON c.oid = t.tgrelid
		WHERE p.pronamespace = to_regnamespace('rwc') AND p.proname LIKE 'maintain\_%'`)
	if err != nil {
		return nil, err
	}
	lines = append(lines, maint...)
	for _, tab := range append(slices.Clone(targets), state...) {
		cols, err := textColumn(ctx, tx, `SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, tab)
		if err != nil {
			return nil, err
		}
		var names, quoted []string
		for _, c := range cols {
			name, typ, _ := strings.Cut(c, " ")
			if strings.HasPrefix(tab, "rwc.") && (volatileState[name] || strings.HasPrefix(typ, "timestamp") || typ == "oid") {
				continue
			}
			expr := pq.QuoteIdentifier(name)
			if tab == "rwc.events" && name == "details" {
				expr = `details #- '{target,oid}'` // the target's copy: its oid differs by database
			}
			names, quoted = append(names, name), append(quoted, expr)
		}
		if len(names) == 0 {
			lines = append(lines, tab+" absent")
			continue
		}
		lines = append(lines, tab+" columns "+strings.Join(names, ","))
		schema, name, _ := strings.Cut(tab, ".")
		rows, err := textColumn(ctx, tx, fmt.Sprintf(`SELECT ROW(%s)::text FROM %s.%s`, strings.Join(quoted, ", "),
			pq.QuoteIdentifier(schema), pq.QuoteIdentifier(name)))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			lines = append(lines, tab+" "+r)
		}
	}
	slices.Sort(lines)
	return lines, nil
}

// textColumn is the one text column q yields.
func textColumn(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// flowParts is each flow's part of a snapshot, as one string: its target's
// lines and its rows in rwc.flows, rwc.fingerprints and rwc.events (a flow
// is named as its target table), and the maintenance functions and
// triggers (the scenarios that have them have one flow).
func flowParts(s []string, targets []string) map[string]string {
	out := map[string]string{}
	for _, tab := range targets {
		_, flow, _ := strings.Cut(tab, ".")
		var b strings.Builder
		for _, l := range s {
			if strings.HasPrefix(l, tab+" ") || strings.HasPrefix(l, "maintenance ") {
				b.WriteString(l + "\n")
			}
			for _, st := range []string{"rwc.flows", "rwc.fingerprints", "rwc.events"} {
				if strings.HasPrefix(l, st+" ("+flow+",") {
					b.WriteString(l + "\n")
				}
			}
		}
		out[flow] = b.String()
	}
	return out
}

// splitTargets is each target's lines of a snapshot, as one string.
func splitTargets(s []string, targets []string) map[string]string {
	out := map[string]string{}
	for _, tab := range targets {
		var b strings.Builder
		for _, l := range s {
			if strings.HasPrefix(l, tab+" ") {
				b.WriteString(l + "\n")
			}
		}
		out[tab] = b.String()
	}
	return out
}

// finalView is a snapshot without rwc's logs and fingerprints.
func finalView(s []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(l string) bool {
		return slices.ContainsFunc(logTables, func(tab string) bool { return strings.HasPrefix(l, tab+" ") })
	})
}

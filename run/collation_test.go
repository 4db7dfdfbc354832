package run_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// ciCollation makes ev's k case-insensitive: under it 'c' = 'C'.
const ciCollation = `CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
	ALTER TABLE ev ALTER COLUMN k TYPE text COLLATE ci`

// textWindow is the daily flow with a window over k, a text column, and
// query (the query's text).
func textWindow(query string) string {
	return strings.NewReplacer("replace_where: d >= date_add(current_date(), -2)", "replace_where: k >= 'A'",
		"SELECT d, k, v FROM ev", query).Replace(dailySpec)
}

// A query that yields the window's text column under a nondeterministic
// collation is refused, changing nothing: filtered by that collation's
// equality, its rows of the window 'c' would include those of 'C', which the
// target's DELETE of 'c' never removes, so each refresh would insert them
// again.
func TestWindowCollationQueryRefused(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(ciCollation)
	f := flow(t, map[string]string{"p.yaml": textWindow("SELECT d, k, v FROM ev")}, "t")
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "the query yields the window's column k (pipelines/p.yaml:7:7) under the nondeterministic collation ci") ||
		!strings.Contains(res.Err.Error(), `"k" COLLATE "default" AS "k"`) {
		t.Fatalf("refresh: %v; want refused, the column and the collation named", res.Err)
	}
	if n := e.count(`SELECT count(*) FROM pg_class WHERE relname = 't'`); n != 0 {
		t.Fatalf("the refused refresh created the target")
	}
	// Yielded under the database's collation, it refreshes (the whole
	// window: the window is not mapped onto ev's k), and after 'C' and
	// then 'c' changed the target is the query's, 'c' told from 'C'.
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1), ('2026-03-09', 'C', 2)`)
	f = flow(t, map[string]string{"p.yaml": textWindow(`SELECT d, k COLLATE "default" AS k, v FROM ev`)}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	for _, k := range []string{"C", "c"} {
		e.exec(`UPDATE ev SET v = v + 100 WHERE k::text COLLATE "C" = $1`, k)
		res := refresh(t, e.runner(now0), reqWindow(f))
		if d := e.rows(`(SELECT d, k, v FROM public.t EXCEPT ALL SELECT d, k::text COLLATE "C", v FROM ev)
			UNION ALL (SELECT d, k::text COLLATE "C", v FROM ev EXCEPT ALL SELECT d, k, v FROM public.t)`); len(d) > 0 {
			t.Errorf("after %s changed (%s %v), the target differs from the query: %v", k, res.Action, res.Partitions, d)
		}
	}
}

// A text window column that the query yields as another type (an enum
// into a text column, which the window then reads after the query only)
// has no collation: it is not refused for one.
func TestWindowCollationNotText(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE TYPE kind AS ENUM ('a', 'b'); ALTER TABLE ev ALTER COLUMN k TYPE kind USING k::kind`)
	spec := strings.Replace(dailySpec, "replace_where: d >= date_add(current_date(), -2)", "replace_where: k == 'a'", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if n := e.count(`SELECT count(*) FROM public.t`); n != 10 {
		t.Fatalf("target has %d rows, want ev's 10 of k a", n)
	}
}

// A target whose window column was given a nondeterministic collation by
// hand is refused too: its DELETE of 'c' would remove the rows of 'C', which
// the query's rows of 'c' do not give back.
func TestWindowCollationTargetRefused(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": textWindow("SELECT d, k, v FROM ev")}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
		ALTER TABLE public.t ALTER COLUMN k TYPE text COLLATE ci`)
	before := e.rows(`SELECT count(*) FROM public.t`)
	e.exec(`UPDATE ev SET v = v + 1`)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	if res.Err == nil || !strings.Contains(res.Err.Error(), `the target "public"."t" (pipelines/p.yaml:3:3) stores the window's column k under the nondeterministic collation ci,`) ||
		!strings.Contains(res.Err.Error(), `ALTER TABLE "public"."t" ALTER COLUMN "k" TYPE text COLLATE "default"`) {
		t.Fatalf("refresh: %v; want refused, the target's column named", res.Err)
	}
	if after := e.rows(`SELECT count(*) FROM public.t WHERE v = (SELECT v FROM ev WHERE ev.d = t.d AND ev.k::text = t.k::text)`); after[0] != "(0)" || before[0] == "(0)" {
		t.Fatalf("the refused refresh wrote the target (%s rows of %s current)", after[0], before[0])
	}
}

// A query that yields the window's text column from a deterministic
// column, but joins it to a source column under a nondeterministic
// collation, joins 'a' to that source's 'A': a change to the 'A' row
// changes the window's 'a' rows, so the window is not mapped onto the
// source's column (nor pushed onto it) and the refresh recomputes it
// whole, saying why.
func TestWindowCollationJoined(t *testing.T) {
	t.Parallel()
	e := newCIDimEnv(t, `('A', 1), ('b', 0)`)
	f := flow(t, map[string]string{"p.yaml": textWindow("SELECT ev.d, ev.k, ev.v + dim.w AS v FROM ev JOIN dim ON dim.k = ev.k")}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE dim SET w = 5 WHERE k::text COLLATE "C" = 'A'`)
	var log strings.Builder
	res := refresh(t, loggingRunner(e, &log), reqWindow(f))
	if d := e.queryDiff("d, k, v", `SELECT ev.d, ev.k, ev.v + dim.w FROM ev JOIN dim ON dim.k = ev.k`); len(d) > 0 {
		t.Fatalf("after dim's 'A' changed (%s %v), the target differs from the query: %v", res.Action, res.Partitions, d)
	}
	if want := `t: the query joins the window's column k to "dim"."k", under the nondeterministic collation ci, which the join compares under ('a' joins 'A'): the window is applied after the query only`; !strings.Contains(log.String(), want) {
		t.Errorf("the refresh's log:\n%s\nwant %q", log.String(), want)
	}
}

// Pushed onto that source, a range compared byte by byte would leave out
// its 'A' row, which the window's 'a' rows join: the first refresh would
// miss them.
func TestWindowCollationJoinedRange(t *testing.T) {
	t.Parallel()
	e := newCIDimEnv(t, `('A', 1), ('b', 0)`)
	spec := strings.Replace(textWindow("SELECT ev.d, ev.k, ev.v + dim.w AS v FROM ev JOIN dim ON dim.k = ev.k"), "replace_where: k >= 'A'", "replace_where: k >= 'a'", 1)
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": spec}, "t")))
	if n := e.count(`SELECT count(*) FROM public.t WHERE k = 'a'`); n != 10 {
		t.Fatalf("the target holds %d rows of k a, want the 10 that join dim's 'A'", n)
	}
}

// Joined under a deterministic collation the query says (COLLATE
// "default" on dim's side), the window is pushed onto ev again and the
// refresh is incremental: nothing is said about collations.
func TestWindowCollationJoinedDeterministically(t *testing.T) {
	t.Parallel()
	e := newCIDimEnv(t, `('a', 1), ('b', 0)`)
	f := flow(t, map[string]string{"p.yaml": textWindow(`SELECT ev.d, ev.k, ev.v + dim.w AS v FROM ev JOIN dim ON dim.k COLLATE "default" = ev.k`)}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = v + 1 WHERE k = 'b'`)
	var log strings.Builder
	res := refresh(t, loggingRunner(e, &log), reqWindow(f))
	if res.Action != compile.ActionIncremental || strings.Contains(log.String(), "collation") {
		t.Errorf("refresh: %s %v, log:\n%s\nwant incremental, no word of collations", res.Action, res.Reasons, log.String())
	}
	if n := e.count(`SELECT count(*) FROM public.t t JOIN ev USING (d, k) WHERE t.v <> ev.v + CASE ev.k WHEN 'a' THEN 1 ELSE 0 END`); n != 0 {
		t.Errorf("%d rows of the target differ from the query's", n)
	}
}

// maintain: immediate recomputes, in the writer's transaction, the window
// values its transition tables name: compared with the target's under the
// joined column's collation, dim's 'A' names the window's 'a' rows too,
// so the target stays the query's.
func TestWindowCollationJoinedImmediate(t *testing.T) {
	t.Parallel()
	e := newCIDimEnv(t, `('A', 1), ('b', 0)`)
	spec := strings.Replace(textWindow("SELECT ev.d, ev.k, ev.v + dim.w AS v FROM ev JOIN dim ON dim.k = ev.k"), "    query: |", "    maintain: immediate\n    query: |", 1)
	f := flow(t, map[string]string{"p.yaml": spec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	query := `SELECT ev.d, ev.k, ev.v + dim.w FROM ev JOIN dim ON dim.k = ev.k`
	for _, dml := range []string{
		`UPDATE dim SET w = 5 WHERE k::text COLLATE "C" = 'A'`,
		`INSERT INTO ev VALUES ('2026-03-09', 'A', 3)`,
		`DELETE FROM dim WHERE k::text COLLATE "C" = 'A'`,
		`INSERT INTO dim VALUES ('B', 7)`,
	} {
		e.exec(dml)
		if d := e.queryDiff("d, k, v", query); len(d) > 0 {
			t.Fatalf("after %s, the target differs from the query: %v", dml, d)
		}
	}
}

// newCIDimEnv is a test's database with ev seeded and dim (k text under
// the case-insensitive collation ci, w integer) holding rows (VALUES).
func newCIDimEnv(t *testing.T, rows string) *env {
	t.Helper()
	e := newDailyEnv(t)
	e.exec(`CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
		CREATE TABLE dim (k text COLLATE ci, w integer);
		INSERT INTO dim VALUES ` + rows)
	return e
}

// loggingRunner is e.runner(now0) writing its log to log.
func loggingRunner(e *env, log io.Writer) *run.Runner {
	return run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 10 * time.Second, Log: log})
}

package run_test

import (
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile"
)

// joinSpec is flow t over columns cols (YAML lines), its window where
// and its query.
func joinSpec(cols, where, query string) string {
	return "pipeline: p\ntables:\n  t:\n    replace_where: " + where + "\n    columns:\n" + cols + "    query: |\n      " + query + "\n"
}

// queryDiff is what differs between the target and query, both ways.
func (e *env) queryDiff(cols, query string) []string {
	e.t.Helper()
	return e.rows(`(SELECT ` + cols + ` FROM public.t EXCEPT ALL ` + query + `) UNION ALL (` + query + ` EXCEPT ALL SELECT ` + cols + ` FROM public.t)`)
}

// A citext dimension: the join compares text as text, case-sensitive,
// but pushed onto dim the window compares citext ('B' < 'a' is false
// there), and probed by its values dim's 'B' and 'b' are one group. The
// window is applied after the query only.
func TestJoinedCitext(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	e.exec(`CREATE EXTENSION IF NOT EXISTS citext; CREATE TABLE dim (k citext, w integer);
		INSERT INTO dim VALUES ('a', 0), ('b', 0), ('B', 1); INSERT INTO ev VALUES ('2026-03-09', 'B', 7)`)
	query := "SELECT ev.d, ev.k, ev.v + dim.w AS v FROM ev JOIN dim ON dim.k = ev.k"
	cols := "      d: date\n      k: text\n      v: integer\n"
	for _, where := range []string{"k < 'a'", "k >= 'A'"} {
		e.exec(`DROP TABLE IF EXISTS public.t; DELETE FROM rwc.flows`)
		f := flow(t, map[string]string{"p.yaml": joinSpec(cols, where, query)}, "t")
		refresh(t, e.runner(now0), reqWindow(f))
		e.exec(`UPDATE dim SET w = w + 100 WHERE k::text = 'B'`)
		res := refresh(t, e.runner(now0), reqWindow(f))
		q := `SELECT d, k, v FROM (` + query + `) q WHERE k COLLATE "C" ` + strings.TrimPrefix(where, "k ")
		if d := e.queryDiff("d, k, v", q); len(d) > 0 {
			t.Errorf("window %s, after dim's 'B' changed (%s %v): the target differs from the query: %v", where, res.Action, res.Partitions, d)
		}
		e.exec(`UPDATE dim SET w = w - 100 WHERE k::text = 'B'`)
	}
}

// A bigint window joined to a double precision column: the join compares
// 2^53 + 1 as 2^53, which the window pushed onto dim.r (> 2^53) drops.
func TestJoinedDoublePrecision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE big (d bigint, k text, v integer); CREATE TABLE dim (r double precision, w integer);
		INSERT INTO big VALUES (9007199254740993, 'x', 10), (5, 'y', 1); INSERT INTO dim VALUES (9007199254740992, 1), (5, 2)`)
	query := "SELECT big.d, big.k, big.v + dim.w AS v FROM big JOIN dim ON dim.r = big.d"
	f := flow(t, map[string]string{"p.yaml": joinSpec("      d: bigint\n      k: text\n      v: integer\n", "d > 9007199254740992", query)}, "t")
	res := refresh(t, e.runner(now0), reqWindow(f))
	if d := e.queryDiff("d, k, v", `SELECT d, k, v FROM (`+query+`) q WHERE d > 9007199254740992`); len(d) > 0 {
		t.Errorf("(%s %v) the target differs from the query: %v", res.Action, res.Reasons, d)
	}
}

// A varchar(3) target of a query yielding an unbounded varchar: the
// INSERT cuts 'ab   ' to 'ab ', another partition than the source's, so
// the window is applied after the query only; probed by the source's
// value, the DELETE of 'ab   ' would leave 'ab ' and the INSERT add it
// again.
func TestTargetVarcharShorter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE ev (d date, k varchar, v integer); INSERT INTO ev VALUES ('2026-03-09', 'ab   ', 7), ('2026-03-09', 'c', 1)`)
	f := flow(t, map[string]string{"p.yaml": joinSpec("      d: date\n      k: varchar(3)\n      v: integer\n", "k >= 'a'", "SELECT d, k, v FROM ev")}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE ev SET v = 70 WHERE k = 'ab   '`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if d := e.queryDiff("d, k, v", `SELECT d, k::varchar(3), v FROM ev`); len(d) > 0 {
		t.Errorf("(%s %v) the target differs from the query: %v", res.Action, res.Partitions, d)
	}
}

// Joined to a column of another type of its family that compares, and
// prints, alike (an integer window, a bigint dimension), the window is
// pushed and the refresh incremental.
func TestJoinedSameFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE n (d integer, k text, v integer); CREATE TABLE dim (x bigint, w integer);
		INSERT INTO n SELECT i % 5, 'k' || i, i FROM generate_series(1, 50) i; INSERT INTO dim SELECT i, i FROM generate_series(0, 4) i`)
	query := "SELECT n.d, n.k, n.v + dim.w AS v FROM n JOIN dim ON dim.x = n.d"
	f := flow(t, map[string]string{"p.yaml": joinSpec("      d: integer\n      k: text\n      v: integer\n", "d >= 2", query)}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`UPDATE dim SET w = 100 WHERE x = 3`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if res.Action != compile.ActionIncremental || len(res.Partitions) != 1 {
		t.Errorf("after dim's 3 changed: %s %v %v, want incremental, partition 3", res.Action, res.Partitions, res.Reasons)
	}
	if d := e.queryDiff("d, k, v", `SELECT d, k, v FROM (`+query+`) q WHERE d >= 2`); len(d) > 0 {
		t.Errorf("the target differs from the query: %v", d)
	}
}

// A timestamp(0) target rounds what it stores: the source's 23:59:59.7
// is stored as midnight, inside a window from midnight on, where the
// window pushed onto the source's own precision would leave it out (and
// a refresh then delete the row the target holds, and not put it back).
func TestTargetTimestampRounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`CREATE TABLE ev (ts timestamp, v integer); INSERT INTO ev VALUES ('2024-01-01 23:59:59.7', 1), ('2024-01-02 10:00', 2), ('2023-12-31 10:00', 3)`)
	f := flow(t, map[string]string{"p.yaml": joinSpec("      ts: timestamp(0)\n      v: integer\n", "ts >= timestamp('2024-01-02T00:00:00Z')", "SELECT ts, v FROM ev")}, "t")
	for range 2 {
		res := refresh(t, e.runner(now0), reqWindow(f))
		if d := e.queryDiff("ts, v", `SELECT ts::timestamp(0), v FROM ev WHERE ts::timestamp(0) >= '2024-01-02'`); len(d) > 0 {
			t.Fatalf("(%s %v) the target differs from the query's rows as it stores them: %v", res.Action, res.Reasons, d)
		}
	}
}

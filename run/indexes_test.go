package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// indexesOf lists the target's indexes as "name method unique primary
// valid columns [where]", from the catalog.
func (e *env) indexesOf(table string) []string {
	e.t.Helper()
	rows, err := e.db.Query(`SELECT c.relname || ' ' || am.amname || ' ' || i.indisunique || ' ' || i.indisprimary || ' ' || i.indisvalid || ' ' ||
			(SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) ||
			coalesce(' where ' || pg_get_expr(i.indpred, i.indrelid), '')
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE i.indrelid = $1::regclass ORDER BY 1`, table)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// indexSpec is dailySpec with extra keys for table t (indented under it).
func indexSpec(keys string) map[string]string {
	return map[string]string{"p.yaml": strings.Replace(dailySpec, "    query: |", keys+"    query: |", 1)}
}

func TestIndexesCreatedWithTarget(t *testing.T) {
	e := newDailyEnv(t)
	e.exec(`ALTER TABLE ev ADD COLUMN tags text[]; UPDATE ev SET tags = ARRAY[k]`)
	f := flow(t, map[string]string{"p.yaml": `pipeline: p
tables:
  t:
    replace_where: d >= date_add(current_date(), -2)
    columns:
      d: date
      k: text
      v: integer
      tags: text[]
    primary_key: [d, k]
    indexes:
      - columns: [d]
        using: brin
      - columns: [tags]
        using: gin
      - columns: [v]
        where: k == 'a' && d >= date('2026-03-01')
      - columns: [k, d]
        unique: true
    query: SELECT d, k, v, tags FROM ev
`}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	var want []string
	for _, ix := range f.Indexes() {
		if !compile.IsRWCIndex(ix.Name) {
			t.Errorf("index %s: not named as rwc's", ix.Name)
		}
		want = append(want, ix.Name)
	}
	got := e.indexesOf("t")
	if len(got) != 5 {
		t.Fatalf("the target has %d indexes, want the primary key and 4:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, line := range []string{" btree true true true d,k", " brin false false true d", " gin false false true tags",
		" btree false false true v where ((k = 'a'::text) AND (d >= '2026-03-01'::date))", " btree true false true k,d"} {
		if !contains(got, want[i]+line) {
			t.Errorf("no index %q among:\n%s", want[i]+line, strings.Join(got, "\n"))
		}
	}
	// The primary key's columns are NOT NULL, the others as declared.
	if n := e.count(`SELECT count(*) FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 AND attnotnull`); n != 2 {
		t.Errorf("%d NOT NULL columns, want the key's 2", n)
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Without indexes:, the target gets a btree index on the partition
// column; indexes: [] opts out.
func TestDefaultIndexAndOptOut(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if got := e.indexesOf("t"); len(got) != 1 || !strings.HasPrefix(got[0], "t_d_rwc_") || !strings.HasSuffix(got[0], " btree false false true d") {
		t.Errorf("indexes %v, want the default btree on d", got)
	}
	none := flow(t, map[string]string{"p.yaml": strings.Replace(strings.Replace(dailySpec, "  t:", "  u:", 1), "    query: |", "    indexes: []\n    query: |", 1)}, "u")
	refresh(t, e.runner(now0), reqWindow(none))
	if got := e.indexesOf("u"); len(got) != 0 {
		t.Errorf("indexes: [] made indexes %v", got)
	}
}

// An index declared for a target that exists is built with CREATE INDEX
// CONCURRENTLY before the refresh, outside its transaction: while the
// build waits for a writer's transaction, other writers go on, and the
// build gives up after the lock timeout, leaving an invalid index that the
// next refresh drops and builds again.
func TestIndexBuiltConcurrentlyOnExistingTarget(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    indexes: []\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	history := e.rows(`SELECT * FROM t`)
	f = flow(t, indexSpec("    indexes:\n      - columns: [k, d]\n        unique: true\n"), "t")
	name := f.Indexes()[0].Name

	// A writer's open transaction on the target.
	ctx := context.Background()
	writer, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, `BEGIN; INSERT INTO t VALUES (DATE '2026-01-01', 'w', 0)`); err != nil {
		t.Fatal(err)
	}
	r := run.New(e.db, run.Options{Now: func() time.Time { return now0 }, LockTimeout: 3 * time.Second})
	done := make(chan run.Result, 1)
	go func() { done <- r.Refresh(ctx, reqWindow(f)) }()
	waitFor(t, func() bool {
		return e.value(`SELECT coalesce(max(command), '') FROM pg_stat_progress_create_index`) == "CREATE INDEX CONCURRENTLY"
	})
	// Another writer is not blocked by the build (a CREATE INDEX would
	// block it until the refresh commits).
	e.exec(`SET statement_timeout = '1s'; INSERT INTO t VALUES (DATE '2026-01-02', 'x', 0); RESET statement_timeout`)
	res := <-done
	t.Log(res.Err)
	var ie *run.IndexError
	if !errors.As(res.Err, &ie) || !strings.Contains(res.Err.Error(), "lock timeout") || !strings.Contains(res.Err.Error(), "drops it and builds it again") {
		t.Fatalf("refresh with a writer holding the target: %v, want the index build to give up after the lock timeout", res.Err)
	}
	if got := e.value(`SELECT indisvalid::text FROM pg_index WHERE indexrelid = to_regclass($1)`, name); got != "false" {
		t.Fatalf("index %s after the failed build: valid %s, want it left invalid", name, got)
	}
	if _, err := writer.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	e.exec(`DELETE FROM t WHERE k = 'x'`)
	if got := e.rows(`SELECT * FROM t`); strings.Join(got, " ") != strings.Join(history, " ") {
		t.Fatalf("the failed build changed the target's rows")
	}
	// The next refresh drops the invalid index and builds it again.
	refresh(t, e.runner(now0), reqWindow(f))
	if got := e.indexesOf("t"); len(got) != 1 || got[0] != name+" btree true false true k,d" {
		t.Errorf("indexes after the next refresh: %v, want %s valid", got, name)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Changing an index's definition builds the new one and drops rwc's old
// one; removing it drops it; an index made by hand is never dropped.
func TestIndexChangedDroppedAndHandMadeKept(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    indexes:\n      - columns: [k]\n      - columns: [v]\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`CREATE INDEX by_hand ON t (v, k)`)
	f = flow(t, indexSpec("    indexes:\n      - columns: [k]\n        using: hash\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	got := e.indexesOf("t")
	want := []string{"by_hand btree false false true v,k", f.Indexes()[0].Name + " hash false false true k"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("indexes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A hand-made index on the partition column serves the window: rwc adds
// no default index beside it.
func TestHandMadeIndexServesAsDefault(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    indexes: []\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`CREATE INDEX ON t (d)`)
	f = flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if got := e.indexesOf("t"); len(got) != 1 || got[0] != "t_d_idx btree false false true d" {
		t.Errorf("indexes %v, want only the hand-made t_d_idx", got)
	}
}

// A query that yields a duplicate of a unique key fails the refresh with
// rwc's message naming the key and the duplicate, and changes nothing.
func TestUniqueViolationNamesKey(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    primary_key: [d, k]\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	before := e.rows(`SELECT * FROM t`)
	e.exec(`INSERT INTO ev VALUES (DATE '2026-03-09', 'a', 99)`)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f))
	var kv *run.KeyViolation
	if !errors.As(res.Err, &kv) {
		t.Fatalf("refresh: %v, want a key violation", res.Err)
	}
	msg := res.Err.Error()
	t.Log(msg)
	for _, want := range []string{"primary key " + f.Indexes()[0].Name + " (d, k)", "Key (d, k)=(2026-03-09, a) already exists",
		"pipelines/p.yaml:9:18", "the target is unchanged"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "pq:") {
		t.Errorf("message has the driver's words: %s", msg)
	}
	if got := e.rows(`SELECT * FROM t`); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("the failed refresh changed the target")
	}
	// A NULL in the key is named too.
	e.exec(`DELETE FROM ev WHERE v = 99; INSERT INTO ev VALUES (DATE '2026-03-09', NULL, 1)`)
	res = e.runner(now0).Refresh(context.Background(), reqWindow(f))
	if !errors.As(res.Err, &kv) || !strings.Contains(res.Err.Error(), "a NULL in column k, which is in the primary key") {
		t.Errorf("refresh with a NULL key: %v", res.Err)
	}
}

// A unique key without the window's column collides with history: the
// refresh fails, naming the key and the row's key, rolled back.
func TestUniqueKeyCollidesWithHistory(t *testing.T) {
	e := newDailyEnv(t)
	f := flow(t, indexSpec("    indexes:\n      - columns: [k, v]\n        unique: true  # rwc:nolint RW406\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	e.exec(`INSERT INTO t VALUES (DATE '2026-01-01', 'a', 7)`) // history, outside the window
	e.exec(`UPDATE ev SET v = 7 WHERE d = DATE '2026-03-09' AND k = 'a'`)
	before := e.rows(`SELECT * FROM t`)
	res := e.runner(now0).Refresh(context.Background(), reqWindow(f)) // the window yields (2026-03-09, a, 7)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "Key (k, v)=(a, 7) already exists") || !strings.Contains(res.Err.Error(), "outside it") {
		t.Fatalf("refresh: %v", res.Err)
	}
	if got := e.rows(`SELECT * FROM t`); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("the failed refresh changed the target")
	}
}

// Every type a spec may declare, with every method lint accepts for it,
// builds; every one lint refuses (RW123) does not: compile.MethodSupports
// is PostgreSQL's operator classes.
func TestMethodSupportsMatchesServer(t *testing.T) {
	e := newEnv(t)
	types := []string{"smallint", "integer", "bigint", "numeric(10,2)", "real", "double precision", "text", "varchar(5)", "char(3)",
		"boolean", "date", "timestamp", "timestamptz", "time", "timetz", "interval", "uuid", "json", "jsonb", "bytea", "inet", "cidr",
		"macaddr", "money", "xml", "bit(3)", "varbit(3)", "tsvector", "oid", "text[]", "integer[]"}
	for i, typ := range types {
		f := flow(t, map[string]string{"p.yaml": "pipeline: p\ntables:\n  t:\n    replace_where: 'true'\n    columns:\n      c: " + typ +
			"\n    indexes: []\n    query: SELECT NULL::" + typ + " AS c\n"}, "t")
		c := f.Table.Column("c")
		table := "m" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		e.exec(`CREATE TABLE ` + table + ` (c ` + c.Type.Canonical + `)`)
		for _, m := range []string{"btree", "hash", "brin", "gin"} {
			_, err := e.db.Exec(`CREATE INDEX ON ` + table + ` USING ` + m + ` (c)`)
			if ok := compile.MethodSupports(m, c.Type); ok != (err == nil) {
				t.Errorf("%s USING %s: lint accepts it: %t; the server: %v", typ, m, ok, err)
			}
		}
	}
}

// A primary key added to a target that exists is built concurrently and
// attached; changed, the new key replaces the old in one statement;
// removed, its columns take NULLs again, as rwc creates every column.
func TestPrimaryKeyOnExistingTarget(t *testing.T) {
	e := newDailyEnv(t)
	refresh(t, e.runner(now0), reqWindow(flow(t, indexSpec("    indexes: []\n"), "t")))
	notNull := func() string {
		return e.value(`SELECT coalesce(string_agg(attname, ',' ORDER BY attname), '') FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 AND attnotnull`)
	}
	pk := func() string {
		return e.value(`SELECT coalesce(max(conname), '') FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'p'`)
	}
	f := flow(t, indexSpec("    indexes: []\n    primary_key: [d, k]\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if pk() != f.Indexes()[0].Name || notNull() != "d,k" {
		t.Fatalf("after adding the key: primary key %q, NOT NULL %q", pk(), notNull())
	}
	f = flow(t, indexSpec("    indexes: []\n    primary_key: [d, k, v]\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if pk() != f.Indexes()[0].Name || notNull() != "d,k,v" {
		t.Fatalf("after changing the key: primary key %q, NOT NULL %q", pk(), notNull())
	}
	f = flow(t, indexSpec("    indexes: []\n"), "t")
	refresh(t, e.runner(now0), reqWindow(f))
	if pk() != "" || notNull() != "" || len(e.indexesOf("t")) != 0 {
		t.Fatalf("after removing the key: primary key %q, NOT NULL %q, indexes %v", pk(), notNull(), e.indexesOf("t"))
	}
	// A target created before rwc made indexes gets the default one.
	refresh(t, e.runner(now0), reqWindow(flow(t, map[string]string{"p.yaml": dailySpec}, "t")))
	if got := e.indexesOf("t"); len(got) != 1 || !strings.HasSuffix(got[0], " btree false false true d") {
		t.Errorf("indexes %v, want the default on d", got)
	}
}

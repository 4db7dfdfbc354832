package run_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run"
)

// Writes that reach the value triggers in unusual ways: each is found, the
// target equals the query's rows, and what the refresh stored is what a
// probe of everything finds (with the triggers out of the way, nothing
// reads as changed).
func TestCaptureValuesAttackWrites(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, setup, dml string }{
		{"upsert", `CREATE UNIQUE INDEX ON ev (d, k)`,
			`INSERT INTO ev VALUES ('2026-03-09', 'a', 5), ('2026-03-10', 'z', 1) ON CONFLICT (d, k) DO UPDATE SET v = EXCLUDED.v`},
		{"upsert moving a row in", `CREATE UNIQUE INDEX ON ev (d, k)`,
			`INSERT INTO ev VALUES ('2026-03-02', 'a', 0) ON CONFLICT (d, k) DO UPDATE SET d = '2026-03-09', k = 'q'`},
		{"cascade delete", `CREATE TABLE kp (k text PRIMARY KEY); INSERT INTO kp VALUES ('a'), ('b'); ALTER TABLE ev ADD FOREIGN KEY (k) REFERENCES kp ON DELETE CASCADE`,
			`DELETE FROM kp WHERE k = 'a'`},
		{"cascade update of d", `CREATE TABLE cal (d date PRIMARY KEY); INSERT INTO cal SELECT generate_series(DATE '2026-03-01', DATE '2026-03-12', interval '1 day');
			ALTER TABLE ev ADD FOREIGN KEY (d) REFERENCES cal ON UPDATE CASCADE`,
			`UPDATE cal SET d = '2026-03-20' WHERE d = '2026-03-02'`},
		{"cascade set null", `CREATE TABLE cal (d date PRIMARY KEY); INSERT INTO cal SELECT generate_series(DATE '2026-03-01', DATE '2026-03-12', interval '1 day');
			ALTER TABLE ev ADD FOREIGN KEY (d) REFERENCES cal ON DELETE SET NULL`,
			`DELETE FROM cal WHERE d = '2026-03-09'`},
		{"savepoints", ``, `BEGIN; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); SAVEPOINT s; INSERT INTO ev VALUES ('2026-03-10', 'c', 1); ROLLBACK TO s;
			SAVEPOINT u; UPDATE ev SET v = 0 WHERE d = '2026-03-08' AND k = 'a'; RELEASE u; COMMIT`},
		{"before row trigger moves the row", `CREATE FUNCTION shift() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.d := NEW.d + 7; RETURN NEW; END$$;
			CREATE TRIGGER a_shift BEFORE INSERT OR UPDATE ON ev FOR EACH ROW EXECUTE FUNCTION shift()`,
			`INSERT INTO ev VALUES ('2026-03-02', 'c', 1); UPDATE ev SET v = 0 WHERE d = '2026-03-01'`},
		{"merge all three", ``, `MERGE INTO ev USING (VALUES (DATE '2026-03-09', 'a', 0), (DATE '2026-03-10', 'x', 1), (DATE '2026-03-08', 'b', -1)) s(d, k, v)
			ON ev.d = s.d AND ev.k = s.k WHEN MATCHED AND s.v < 0 THEN DELETE WHEN MATCHED THEN UPDATE SET d = '2026-03-11'
			WHEN NOT MATCHED THEN INSERT VALUES (s.d, s.k, s.v)`},
		{"writable CTE", ``, `WITH x AS (DELETE FROM ev WHERE d = '2026-03-08' RETURNING *) INSERT INTO ev SELECT d + 1, k, v FROM x`},
		{"two CTEs on one table", ``, `WITH x AS (UPDATE ev SET v = 1 WHERE d = '2026-03-09' RETURNING 1), y AS (DELETE FROM ev WHERE d = '2026-03-10' RETURNING 1) SELECT (SELECT count(*) FROM x), (SELECT count(*) FROM y)`},
		{"copy freeze", ``, `BEGIN; CREATE TABLE ev_copy AS SELECT * FROM ev; TRUNCATE ev; COPY ev FROM PROGRAM 'echo 2026-03-10,z,3' WITH (FORMAT csv, FREEZE); INSERT INTO ev SELECT * FROM ev_copy WHERE d <> '2026-03-09'; COMMIT`},
		{"another table's trigger", `CREATE TABLE side (d date); CREATE FUNCTION fwd() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO ev VALUES (NEW.d, 'side', 1); RETURN NULL; END$$;
			CREATE TRIGGER fwd AFTER INSERT ON side FOR EACH ROW EXECUTE FUNCTION fwd()`, `INSERT INTO side VALUES ('2026-03-09')`},
		{"nothing matched", ``, `UPDATE ev SET v = 0 WHERE d = '2026-03-30'`},
		{"target's own rows", ``, `UPDATE public.t SET v = -1 WHERE d = '2026-03-09'; INSERT INTO public.t VALUES ('2026-03-10', 'zz', 1)`},
		{"serializable writer", ``, `BEGIN ISOLATION LEVEL SERIALIZABLE; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); COMMIT`},
		{"generated partition column", `CREATE TABLE ev2 (ts timestamp, k text, v integer, d date GENERATED ALWAYS AS (ts::date) STORED);
			INSERT INTO ev2 (ts, k, v) SELECT d + time '10:00', k, v FROM ev; DROP TABLE ev; ALTER TABLE ev2 RENAME TO ev`,
			`UPDATE ev SET ts = '2026-03-09 08:00' WHERE d = '2026-03-02'; INSERT INTO ev (ts, k, v) VALUES ('2026-03-10 23:59', 'c', 1)`},
		{"replica role", ``, `SET session_replication_role = replica; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); RESET session_replication_role`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			if c.setup != "" {
				e.exec(c.setup)
			}
			f := vouched(t, e, triggerSpec)
			e.exec(c.dml)
			res := refresh(t, e.runner(now0), reqWindow(f))
			sameAsQuery(t, e, res)
			storedExact(t, e, f)
		})
	}
}

// storedExact checks that what the last refresh stored is what probes of
// everything find: with the triggers out of the way, a refresh finds
// nothing changed.
func storedExact(t *testing.T, e *env, f *flowT) {
	t.Helper()
	e.exec(`ALTER TABLE ev DISABLE TRIGGER rwc_capture_insert; ALTER TABLE public.t DISABLE TRIGGER rwc_capture`)
	again := refresh(t, e.runner(now0), reqWindow(f))
	if len(again.Partitions) != 0 || !strings.Contains(again.Capture, "disabled") {
		t.Errorf("probed whole: %s %v %v, capture %q; want nothing changed", again.Action, again.Reasons, again.Partitions, again.Capture)
	}
	sameAsQuery(t, e, again)
}

// A long value of a text partition column (outside the window: the
// target's index on its partition column could not hold it) is logged as
// "anything may have changed": rwc.change_values' key could not hold it
// either, and the writer's statement failed.
func TestCaptureValuesAttackLongText(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := strings.Replace(triggerSpec, "replace_where: d >= date_add(current_date(), -2)", "replace_where: k >= 'b'", 1)
	f := vouched(t, e, spec)
	if _, err := e.db.Exec(`INSERT INTO ev SELECT '2026-03-09', 'a' || string_agg(md5(i::text), ''), 1 FROM generate_series(1, 400) i`); err != nil {
		t.Fatalf("a writer's insert of a long value fails: %v", err)
	}
	res := refresh(t, e.runner(now0), reqWindow(f))
	if d := e.rows(`(SELECT d, k, v FROM public.t EXCEPT ALL SELECT d, k, v FROM ev WHERE k >= 'b') UNION ALL (SELECT d, k, v FROM ev WHERE k >= 'b' EXCEPT ALL SELECT d, k, v FROM public.t)`); len(d) > 0 {
		t.Errorf("target differs (%v): %d rows", res.Partitions, len(d))
	}
	if !strings.Contains(res.Capture, `"ev" changed;`) {
		t.Errorf("capture %q, want ev probed whole", res.Capture)
	}
}

// step is one write (or DDL) and the refresh after it, at a day's offset
// from now0.
type step struct {
	dml  string
	days int
}

// Sequences of writes, DDL and refreshes: after each, the target's window
// equals the query's rows; after the last, what is stored is exact.
func TestCaptureValuesAttackSequences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"window moves", []step{{`INSERT INTO ev VALUES ('2026-03-10', 'c', 1)`, 1}, {`INSERT INTO ev VALUES ('2026-03-11', 'c', 1)`, 1},
			{`UPDATE ev SET v = 3 WHERE d = '2026-03-09' AND k = 'a'`, 1}, {``, 1}, {`UPDATE ev SET v = 4 WHERE d = '2026-03-11'`, 2}}},
		{"external write into the rewritten partition", []step{{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, 0},
			{`UPDATE public.t SET v = -1 WHERE d = '2026-03-09' AND k = 'a'`, 0}, {`DELETE FROM public.t WHERE d = '2026-03-09' AND k = 'c'`, 0}}},
		{"external write beside the rewritten partition", []step{{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, 0},
			{`UPDATE public.t SET v = -1 WHERE d = '2026-03-10' AND k = 'a'`, 0}}},
		{"outside the window, then the target", []step{{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, 0},
			{`UPDATE ev SET v = 0 WHERE d = '2026-03-02'`, 0}, {``, 0}, {`UPDATE public.t SET v = -1 WHERE d = '2026-03-09' AND k = 'c'`, 0}, {``, 0}}},
		{"rewritten twice", []step{{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, 0}, {`INSERT INTO ev VALUES ('2026-03-09', 'd', 1)`, 0},
			{`INSERT INTO ev VALUES ('2026-03-10', 'd', 1)`, 0}, {``, 0}, {`DELETE FROM public.t WHERE k = 'd'`, 0}}},
		{"emptied partition", []step{{`DELETE FROM ev WHERE d = '2026-03-09'`, 0}, {``, 0}, {`INSERT INTO public.t VALUES ('2026-03-09', 'x', 1)`, 0}}},
		{"column renamed, another takes its name", []step{
			{`ALTER TABLE ev RENAME COLUMN d TO d_old; ALTER TABLE ev ADD COLUMN d date; UPDATE ev SET d = d_old + 1`, 0},
			{`INSERT INTO ev (d, k, v) VALUES ('2026-03-09', 'c', 1)`, 0}, {`UPDATE ev SET d_old = '2026-03-09' WHERE d = '2026-03-02'`, 0},
			{`UPDATE ev SET d = '2026-03-09' WHERE d = '2026-03-02'`, 0}, {``, 0}}},
		{"column dropped", []step{
			{`ALTER TABLE ev RENAME COLUMN d TO d_old; ALTER TABLE ev ADD COLUMN d date; UPDATE ev SET d = d_old + 1`, 0}, {``, 0},
			{`ALTER TABLE ev DROP COLUMN d_old`, 0}, {`INSERT INTO ev (d, k, v) VALUES ('2026-03-09', 'c', 1)`, 0}, {``, 0}}},
		{"triggers disabled around a write", []step{{`BEGIN; ALTER TABLE ev DISABLE TRIGGER USER; INSERT INTO ev VALUES ('2026-03-09', 'c', 1); ALTER TABLE ev ENABLE TRIGGER USER; COMMIT`, 0}, {``, 0}}},
		{"trigger replaced by hand", []step{{`DROP TRIGGER rwc_capture_insert ON ev; INSERT INTO ev VALUES ('2026-03-09', 'c', 1);
			CREATE TRIGGER rwc_capture_insert AFTER INSERT ON ev REFERENCING NEW TABLE AS rwc_new FOR EACH STATEMENT EXECUTE FUNCTION rwc.capture_values('1')`, 0},
			{`INSERT INTO ev VALUES ('2026-03-10', 'c', 1)`, 0}, {``, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := vouched(t, e, triggerSpec)
			last := 0
			for i, s := range c.steps {
				if s.dml != "" {
					e.exec(s.dml)
				}
				res := refresh(t, e.runner(now0.AddDate(0, 0, s.days)), reqWindow(f))
				sameAsQueryFrom(t, e, res, now0.AddDate(0, 0, s.days-2).Format("2006-01-02"), i)
				last = s.days
			}
			e.exec(`ALTER TABLE ev DISABLE TRIGGER rwc_capture_insert; ALTER TABLE public.t DISABLE TRIGGER rwc_capture`)
			again := refresh(t, e.runner(now0.AddDate(0, 0, last)), reqWindow(f))
			if len(again.Partitions) != 0 || !strings.Contains(again.Capture, "disabled") {
				t.Errorf("probed whole: %s %v %v, capture %q; want nothing changed", again.Action, again.Reasons, again.Partitions, again.Capture)
			}
		})
	}
}

// sameAsQueryFrom checks that the target's window (d >= from) equals the
// query's rows after step i.
func sameAsQueryFrom(t *testing.T, e *env, res run.Result, from string, i int) {
	t.Helper()
	q := strings.ReplaceAll(`(SELECT d, k, v FROM public.t WHERE d >= 'FROM' EXCEPT ALL SELECT d, k, v FROM ev WHERE d >= 'FROM')
		UNION ALL (SELECT d, k, v FROM ev WHERE d >= 'FROM' EXCEPT ALL SELECT d, k, v FROM public.t WHERE d >= 'FROM')`, "FROM'", from+"'")
	if diff := e.rows(q); len(diff) > 0 {
		t.Errorf("step %d: the target's window differs from the query's rows (%s %v %v, capture %q): %v", i, res.Action, res.Reasons, res.Partitions, res.Capture, diff)
	}
}

// A chain: u reads t, the target of the daily flow, through its partition
// column, so t's triggers log its values; t's refreshes write t (rwc's
// own writes on t's flow, a source's change on u's), and so does someone
// else. Both stay equal to their queries, and store what probes find.
func TestCaptureValuesAttackChain(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	files := map[string]string{"p.yaml": triggerSpec + `  u:
    replace_where: d >= date_add(current_date(), -1)
    columns:
      d: date
      k: text
      v: integer
    capture: triggers
    query: |
      SELECT d, k, v FROM t
`}
	ft, fu := flow(t, files, "t"), flow(t, files, "u")
	for range 3 {
		refresh(t, e.runner(now0), reqWindow(ft))
		refresh(t, e.runner(now0), reqWindow(fu))
	}
	same := func(step string) {
		t.Helper()
		if d := e.rows(`(SELECT d, k, v FROM public.u EXCEPT ALL SELECT d, k, v FROM public.t WHERE d >= '2026-03-09')
			UNION ALL (SELECT d, k, v FROM public.t WHERE d >= '2026-03-09' EXCEPT ALL SELECT d, k, v FROM public.u WHERE d >= '2026-03-09')`); len(d) > 0 {
			t.Errorf("%s: u differs from t: %v", step, d)
		}
	}
	for i, dml := range []string{`INSERT INTO ev VALUES ('2026-03-09', 'c', 1)`, `UPDATE public.t SET v = -5 WHERE d = '2026-03-10' AND k = 'a'`,
		`INSERT INTO ev VALUES ('2026-03-10', 'd', 1); UPDATE public.t SET v = -6 WHERE d = '2026-03-09' AND k = 'c'`, ``} {
		e.exec(dml + ";")
		rt := refresh(t, e.runner(now0), reqWindow(ft))
		ru := refresh(t, e.runner(now0), reqWindow(fu))
		sameAsQuery(t, e, rt)
		same(fmt.Sprintf("step %d (t: %v %s; u: %v %s)", i, rt.Partitions, rt.Capture, ru.Partitions, ru.Capture))
	}
	e.exec(`ALTER TABLE ev DISABLE TRIGGER rwc_capture_insert; ALTER TABLE public.t DISABLE TRIGGER rwc_capture_insert; ALTER TABLE public.u DISABLE TRIGGER rwc_capture`)
	for _, f := range []*flowT{ft, fu} {
		if again := refresh(t, e.runner(now0), reqWindow(f)); len(again.Partitions) != 0 || !strings.Contains(again.Capture, "disabled") {
			t.Errorf("%s probed whole: %s %v %v, capture %q; want nothing changed", f.Name(), again.Action, again.Reasons, again.Partitions, again.Capture)
		}
	}
}

// A partition column given a nondeterministic collation after rwc's value
// triggers were installed, where 'c' = 'C': the triggers still log each
// value a statement wrote byte by byte, 'c' and 'C' apart; the next
// refresh refuses the flow (RW504) before it reads them.
func TestCaptureValuesAttackNondeterministicCollation(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	spec := strings.Replace(triggerSpec, "replace_where: d >= date_add(current_date(), -2)", "replace_where: k >= 'A'", 1)
	f := vouched(t, e, spec)
	e.exec(`CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
		ALTER TABLE ev ALTER COLUMN k TYPE text COLLATE ci`)
	e.exec(`INSERT INTO ev VALUES ('2026-03-09', 'c', 1), ('2026-03-09', 'C', 2)`)
	logged := e.value(`SELECT string_agg(DISTINCT l.value COLLATE "C", ',' ORDER BY l.value COLLATE "C") FROM rwc.change_values l
		JOIN pg_attribute a ON a.attrelid = l.relid AND a.attnum = l.attnum WHERE l.relid = 'ev'::regclass AND a.attname = 'k'`)
	if logged != "C,c" {
		t.Errorf("logged values of k: %s; want C and c apart", logged)
	}
	if res := e.runner(now0).Refresh(context.Background(), reqWindow(f)); res.Err == nil || !strings.Contains(res.Err.Error(), "under the nondeterministic collation ci") {
		t.Errorf("refresh after the collation changed: %v; want refused", res.Err)
	}
}

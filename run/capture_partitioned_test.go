package run_test

import (
	"strings"
	"testing"
	"time"
)

// partTriggerSpec is the daily flow with a target partitioned by day,
// capturing by triggers.
var partTriggerSpec = partSpec + "    capture: triggers\n"

// A partitioned target vouches as a plain one does: its triggers are on
// the parent (writes through it) and on every partition (writes straight
// to one), those rwc creates and swaps in included, so that a refresh
// after a swap, or after a new day's partition was made, skips its probes
// too; what anyone else does to it is found.
func TestCapturePartitionedTarget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, dml, why string }{
		{"into a partition", `INSERT INTO public.t_p20260309 VALUES ('2026-03-09', 'z', 1)`, `"public"."t" changed`},
		{"through the parent", `UPDATE public.t SET v = -1 WHERE d = '2026-03-09'`, `"public"."t" changed`},
		// TRUNCATE gives the partition a new file: its catalog row changes.
		{"truncate a partition", `TRUNCATE public.t_p20260310`, `"public"."t" its trigger, or the table's definition, changed`},
		{"delete through the parent", `DELETE FROM public.t WHERE d = '2026-03-08'`, `"public"."t" changed`},
		{"a partition's trigger disabled for a while", `ALTER TABLE public.t_p20260309 DISABLE TRIGGER rwc_capture;
			DELETE FROM public.t_p20260309; ALTER TABLE public.t_p20260309 ENABLE ALWAYS TRIGGER rwc_capture`,
			`"public"."t" its trigger, or the table's definition, changed`},
		{"a partition detached and attached again", `ALTER TABLE public.t DETACH PARTITION public.t_p20260309;
			DELETE FROM public.t_p20260309; ALTER TABLE public.t ATTACH PARTITION public.t_p20260309 FOR VALUES FROM ('2026-03-09') TO ('2026-03-10')`,
			`"public"."t" its trigger, or the table's definition, changed`},
		{"a partition without rwc's trigger", `ALTER TABLE public.t DETACH PARTITION public.t_p20260309; DROP TABLE public.t_p20260309;
			CREATE TABLE public.t_p20260309 PARTITION OF public.t FOR VALUES FROM ('2026-03-09') TO ('2026-03-10')`,
			`a partition lacks rwc's triggers`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			f := vouched(t, e, partTriggerSpec)
			e.exec(c.dml)
			recomputed(t, e, f, c.why)
		})
	}
}

// After a refresh that swapped a changed day's partition in, and one that
// made the next day's partition, the target still vouches: the next
// refresh with nothing changed probes nothing.
func TestCapturePartitionedTargetKeepsVouching(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, partTriggerSpec)
	e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
	res := refresh(t, e.runner(now0), reqWindow(f))
	if !strings.Contains(strings.Join(res.Partitions, ","), "2026-03-09") {
		t.Fatalf("after a change of 2026-03-09: %s %v, capture %q", res.Action, res.Partitions, res.Capture)
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") {
		t.Errorf("after the swap: capture %q, want no probe", res.Capture)
	}
	// The next day: its partition is made, with rwc's trigger.
	next := now0.Add(24 * time.Hour)
	refresh(t, e.runner(next), reqWindow(f))
	if n := e.count(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.t_p20260311'::regclass AND tgname = 'rwc_capture'`); n != 1 {
		t.Errorf("the premade partition has %d rwc_capture triggers", n)
	}
	if res := refresh(t, e.runner(next), reqWindow(f)); !strings.Contains(res.Capture, "no probe") {
		t.Errorf("a day later: capture %q, want no probe", res.Capture)
	}
	e.exec(`INSERT INTO public.t_p20260311 VALUES ('2026-03-11', 'z', 1)`)
	res = refresh(t, e.runner(next), reqWindow(f))
	if !strings.Contains(res.Capture, `"public"."t" changed`) {
		t.Errorf("a write to the premade partition: capture %q", res.Capture)
	}
	if n := e.count(`SELECT count(*) FROM public.t WHERE k = 'z'`); n != 0 {
		t.Errorf("the row written into the target by hand is still there (%d): %s %v", n, res.Action, res.Partitions)
	}
}

// A partitioned source vouches too, its writes logged from the parent and
// from each partition; a partition that cannot log (unlogged) keeps it
// probed, and one the user adds without rwc's trigger gets it.
func TestCapturePartitionedSource(t *testing.T) {
	t.Parallel()
	const partitioned = `ALTER TABLE ev RENAME TO ev_old; CREATE TABLE ev (d date, k text, v integer) PARTITION BY RANGE (d);
		CREATE TABLE ev_p PARTITION OF ev FOR VALUES FROM ('2026-01-01') TO ('2026-03-10');
		CREATE TABLE ev_q PARTITION OF ev FOR VALUES FROM ('2026-03-10') TO ('2027-01-01'); INSERT INTO ev SELECT * FROM ev_old`
	for _, c := range []struct{ name, dml, why string }{
		{"into a partition", `INSERT INTO ev_q VALUES ('2026-03-10', 'c', 1)`, `"ev" changed`},
		{"through the parent", `UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`, `"ev" changed`},
		{"truncate a partition", `TRUNCATE ev_q`, `"ev" its trigger, or the table's definition, changed`},
		{"a new partition", `CREATE TABLE ev_r PARTITION OF ev FOR VALUES FROM ('2027-01-01') TO ('2028-01-01')`, `"ev" is partitioned, and a partition lacks rwc's triggers`},
		{"an unlogged partition", `CREATE UNLOGGED TABLE ev_r (d date, k text, v integer); ALTER TABLE ev ATTACH PARTITION ev_r FOR VALUES FROM ('2027-01-01') TO ('2028-01-01')`,
			`a partition is not a plain, logged table`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			e.exec(partitioned)
			f := vouched(t, e, triggerSpec)
			e.exec(c.dml)
			recomputed(t, e, f, c.why)
		})
	}
}

// What the target's triggers vouch for is its window: partitions outside
// it come and go (history attached by hand, retention dropping old days)
// without costing a probe, and rows written there are left alone.
func TestCapturePartitionedTargetHistory(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, partTriggerSpec)
	e.exec(`CREATE TABLE public.t_p20260301 (d date, k text, v integer);
		INSERT INTO public.t_p20260301 VALUES ('2026-03-01', 'h', 1);
		ALTER TABLE public.t ATTACH PARTITION public.t_p20260301 FOR VALUES FROM ('2026-03-01') TO ('2026-03-02')`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") {
		t.Errorf("after history was attached: capture %q, want no probe", res.Capture)
	}
	e.exec(`DROP TABLE public.t_p20260301`)
	if res := refresh(t, e.runner(now0), reqWindow(f)); !strings.Contains(res.Capture, "no probe") {
		t.Errorf("after a retention drop: capture %q, want no probe", res.Capture)
	}
	// A partition of the window dropped is found.
	e.exec(`DROP TABLE public.t_p20260309`)
	recomputed(t, e, f, `"public"."t" its trigger, or the table's definition, changed`)
}

package run_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run"
)

// reloptions is the target t's storage settings, in name order.
func reloptions(e *env) string {
	return e.value(`SELECT coalesce(string_agg(o, ',' ORDER BY o), '') FROM pg_class, unnest(reloptions) o WHERE oid = 't'::regclass`)
}

// On a server whose autovacuum runs, a refresh hands the target to it:
// the created target gets a threshold of four windows' worth of dead rows
// (the floor, 1000 rows a window, here), a window that grows past twice
// that gets it again, and however many rows refreshes leave dead, rwc
// itself never vacuums the target after its creation.
func TestRefreshHandsVacuumToAutovacuum(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, r, reqWindow(f))
	if got := reloptions(e); got != "autovacuum_vacuum_cost_delay=0,autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=4000" {
		t.Errorf("after the create: %q; want rwc's threshold, 4000", got)
	}
	manual := func() int64 { return e.count(`SELECT pg_stat_get_vacuum_count('t'::regclass)`) }
	before := manual()
	e.exec(`INSERT INTO ev SELECT DATE '2026-03-09', 'late', i FROM generate_series(1, 3000) i`)
	refresh(t, r, reqWindow(f))
	if got := reloptions(e); got != "autovacuum_vacuum_cost_delay=0,autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=12024" {
		t.Errorf("after the window grew to 3006 rows: %q; want four windows' worth, 12024", got)
	}
	for range 4 {
		refresh(t, r, run.Request{Flow: f, Mode: run.Full})
	}
	if after := manual(); after != before {
		t.Errorf("rwc vacuumed the target %d times; autovacuum's to do", after-before)
	}
	if dead := e.count(`SELECT dead_rows FROM rwc.flows`); dead < 4*3006 && e.count(`SELECT pg_stat_get_autovacuum_count('t'::regclass)`) == 0 {
		t.Errorf("dead_rows %d after four full refreshes of 3006 rows and no autovacuum", dead)
	}
}

// Autovacuum settings that a user gave the target (a scale factor other
// than 0) are theirs: a refresh leaves them alone (rwc's cost delay, set
// at the creation, stays as it is), and does not vacuum.
// With autovacuum off on the table, rwc vacuums it itself.
func TestRefreshKeepsTheTablesOwnAutovacuumSettings(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	r := e.runner(now0)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, r, reqWindow(f))
	e.exec(`ALTER TABLE t RESET (autovacuum_vacuum_threshold); ALTER TABLE t SET (autovacuum_vacuum_scale_factor = 0.05)`)
	e.exec(`INSERT INTO ev SELECT DATE '2026-03-09', 'late', i FROM generate_series(1, 5000) i`)
	manual := func() int64 { return e.count(`SELECT pg_stat_get_vacuum_count('t'::regclass)`) }
	before := manual()
	refresh(t, r, reqWindow(f))
	refresh(t, r, run.Request{Flow: f, Mode: run.Full})
	if got := reloptions(e); got != "autovacuum_vacuum_cost_delay=0,autovacuum_vacuum_scale_factor=0.05" {
		t.Errorf("the user's settings became %q", got)
	}
	if after := manual(); after != before {
		t.Errorf("rwc vacuumed a target whose autovacuum settings are the user's")
	}

	// Each full refresh leaves the window's 5006 rows dead: the third is
	// past four windows' worth.
	e.exec(`ALTER TABLE t SET (autovacuum_enabled = off)`)
	for range 4 {
		refresh(t, r, run.Request{Flow: f, Mode: run.Full})
	}
	if after := manual(); after != before+1 {
		t.Errorf("rwc vacuumed the target %d times in four full refreshes with autovacuum off on it; want once", after-before)
	}
}

// The threshold rwc sets is a change to the target's catalog row, made in
// the refresh's transaction before its capture stores the target's token:
// the next refresh of a flow capturing by triggers still finds nothing to
// probe.
func TestAutovacuumThresholdIsTheRefreshsOwnDDL(t *testing.T) {
	t.Parallel()
	e := newDailyEnv(t)
	f := vouched(t, e, triggerSpec)
	e.exec(`INSERT INTO ev SELECT DATE '2026-03-09', 'late', i FROM generate_series(1, 3000) i`)
	refresh(t, e.runner(now0), reqWindow(f))
	if got := reloptions(e); got != "autovacuum_vacuum_cost_delay=0,autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=12024" {
		t.Fatalf("after the window grew: %q; want the threshold set again", got)
	}
	if res := refresh(t, e.runner(now0), reqWindow(f)); len(res.Partitions) != 0 || !strings.Contains(res.Capture, "no probe") {
		t.Errorf("the refresh after: %s %v, capture %q; want nothing changed, unprobed", res.Action, res.Partitions, res.Capture)
	}
}

// With track_counts off, autovacuum sees no dead rows and vacuums nothing:
// rwc vacuums the target itself, once its own count of the dead rows its
// refreshes left reaches four windows' worth (the server counts none to
// compare with), gives it no autovacuum settings, and rwc status says so.
func TestTrackCountsOffRWCVacuums(t *testing.T) {
	t.Parallel()
	e := newServerEnv(t, "track_counts = off")
	db := e.db
	e.seedDaily()
	e.exec(`CREATE EXTENSION pgstattuple`)
	r := e.runner(now0)
	f := flow(t, map[string]string{"p.yaml": dailySpec}, "t")
	refresh(t, r, reqWindow(f))
	e.exec(`INSERT INTO ev SELECT DATE '2026-03-09', 'late', i FROM generate_series(1, 5000) i`)
	// Each full refresh deletes every row, leaving them dead; the window
	// holds 5,006, so rwc vacuums once it counts 20,024. Its VACUUM leaves
	// the table no dead row (the refreshes between leave theirs to the
	// next one's pruning: one refresh's worth stays).
	var counted, dead []int64
	for range 5 {
		refresh(t, r, run.Request{Flow: f, Mode: run.Full})
		counted = append(counted, e.count(`SELECT dead_rows FROM rwc.flows`))
		dead = append(dead, e.count(`SELECT dead_tuple_count FROM pgstattuple('t')`))
	}
	if fmt.Sprint(counted) != "[6 5012 10018 15024 0]" || dead[3] == 0 || dead[4] != 0 {
		t.Errorf("after each full refresh, rwc counted %v dead rows and the table held %v; want rwc's VACUUM after the fifth", counted, dead)
	}
	if got := reloptions(e); got != "" {
		t.Errorf("the target got storage settings %q on a server whose autovacuum sees nothing", got)
	}
	st, err := run.ReadStatus(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.Flows[0].Capture.Vacuum; v.By != "rwc" || v.Why != "autovacuum is off on the server" {
		t.Errorf("rwc status says %+v of who vacuums, want rwc, autovacuum being off", v)
	}
}

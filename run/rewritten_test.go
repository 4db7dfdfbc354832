package run_test

import (
	"fmt"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// A refresh does not fingerprint the rows it just inserted: it stores how
// many it inserted and which partitions it rewrote (all of the window, or
// those an incremental refresh recomputed), and the next refresh finds them
// by their inserting transaction. Whatever DML touched the window since
// shows as external; what did not (time moving on, a freeze, DML outside the
// window) leaves the next refresh incremental, and that one stores
// fingerprints for them.
func TestRewrittenPartitionsCheckedByWriter(t *testing.T) {
	t.Parallel()
	rewrites := []struct {
		name string
		// rewrite leaves the last refresh's mark: the rows inserted, the
		// partitions marked rewritten and those fingerprinted.
		rewrite               func(s *scenario)
		rows, marked, printed int64
	}{
		{name: "window rewritten whole", rows: 6, rewrite: func(s *scenario) {
			checkOutcome(s.t, s.refresh(), compile.ActionCreate, compile.ReasonFirstRefresh)
		}},
		{name: "one day rewritten", rows: 2, marked: 1, printed: 2, rewrite: func(s *scenario) {
			s.refresh()
			expectPartitions(s.t, s.refresh())
			s.e.exec(`UPDATE ev SET v = v + 1 WHERE d = '2026-03-09'`)
			expectPartitions(s.t, s.refresh(), "2026-03-09")
		}},
		// Rows counted per partition: a row missing from a day that has
		// left the window says nothing about the day still in it.
		{name: "two days rewritten", rows: 4, marked: 2, printed: 1, rewrite: func(s *scenario) {
			s.refresh()
			s.e.exec(`UPDATE ev SET v = v + 1 WHERE d >= '2026-03-09'`)
			expectPartitions(s.t, s.refresh(), "2026-03-09", "2026-03-10")
		}},
	}
	changes := []struct {
		name   string
		change func(s *scenario)
		// external: the next refresh falls back with
		// EXTERNAL_CHANGE_IN_REPLACE_WINDOW; externalAfterWhole: only after
		// a rewrite of the whole window, whose rows are counted as a whole
		// and whose partitions are not listed, so that a missing row cannot
		// be placed (documented: a needless recompute).
		external, externalAfterWhole bool
	}{
		{name: "nothing, a day later", change: func(s *scenario) { s.now = at(1) }},
		{name: "frozen", change: func(s *scenario) { s.e.exec(`VACUUM (FREEZE) t`) }},
		{name: "DML outside the window", change: func(s *scenario) {
			s.dml(`INSERT INTO %s VALUES ('2026-03-01', 'dml', 1)`)
		}},
		{name: "a row inserted on a rewritten day", external: true, change: func(s *scenario) {
			s.dml(`INSERT INTO %s VALUES ('2026-03-09', 'dml', 1)`)
		}},
		{name: "a rewritten row deleted", external: true, change: func(s *scenario) {
			s.dml(`DELETE FROM %s WHERE d = '2026-03-09' AND k = 'a'`)
		}},
		{name: "a row updated to the same values", external: true, change: func(s *scenario) {
			s.dml(`UPDATE %s SET v = v WHERE d = '2026-03-10' AND k = 'b'`)
		}},
		{name: "a day emptied", external: true, change: func(s *scenario) {
			s.dml(`DELETE FROM %s WHERE d = '2026-03-10'`)
		}},
		{name: "a rewritten row deleted from a day that has left the window since", externalAfterWhole: true, change: func(s *scenario) {
			s.now = at(2)
			s.dml(`DELETE FROM %s WHERE d = '2026-03-09' AND k = 'a'`)
		}},
	}
	for _, rw := range rewrites {
		for _, tc := range changes {
			t.Run(rw.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := newDailyScenario(t)
				e := s.e
				rw.rewrite(s)
				marks := func() string {
					return fmt.Sprintf("%s, %d marked, %d fingerprinted",
						e.value(`SELECT coalesce((SELECT n || ' rows' FROM rwc.fingerprints WHERE flow = 't' AND source = '' AND whole AND value = 'rewritten'), 'none')`),
						e.count(`SELECT count(*) FROM rwc.fingerprints WHERE flow = 't' AND source = '' AND NOT whole AND n = -3`),
						e.count(`SELECT count(*) FROM rwc.fingerprints WHERE flow = 't' AND source = '' AND NOT whole AND n >= 0`))
				}
				if got, want := marks(), fmt.Sprintf("%d rows, %d marked, %d fingerprinted", rw.rows, rw.marked, rw.printed); got != want {
					t.Fatalf("after the rewrite the target's state is %s, want %s", got, want)
				}
				// Each partition marked holds the rows inserted there: two a day.
				if n := e.count(`SELECT count(*) FROM rwc.fingerprints WHERE flow = 't' AND n = -3 AND h <> 2`); n != 0 {
					t.Fatalf("%d partitions marked with another count than the 2 rows inserted there", n)
				}
				tc.change(s)
				res := s.refresh()
				if tc.external || tc.externalAfterWhole && rw.marked == 0 {
					checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
					return
				}
				expectPartitions(t, res)
				if got := marks(); got[:4] != "none" {
					t.Fatalf("after an incremental refresh that wrote nothing the target's state is %s, want fingerprints only", got)
				}
				expectPartitions(t, s.refresh())
			})
		}
	}

}

// A rewrite's transaction is recognised by the low 32 bits of its id, which
// xmin holds: once 2^31 more ids have been handed out, rows of another
// transaction may carry them, so the mark no longer vouches for anything.
// (Here the stored id is moved back by 2^32: the same xmin, an id too old.)
func TestRewrittenMarkExpires(t *testing.T) {
	t.Parallel()
	s := newDailyScenario(t)
	e := s.e
	s.refresh()
	e.exec(`UPDATE rwc.fingerprints SET h = h - 4294967296 WHERE flow = 't' AND source = '' AND whole AND value = 'rewritten'`)
	checkOutcome(t, s.refresh(), compile.ActionRecomputeWindow, compile.ReasonExternalChange)
	expectPartitions(t, s.refresh())
}

// An override stores the target's fingerprints again, except for the
// partitions that DML changed before it and that it did not recompute:
// those stay marked as changed, per partition. So the DML shows at the next
// refresh while it is in the window, and is no reason once it has left it;
// a day emptied by DML shows too. Before the fingerprints were kept per
// partition, an override after DML stored nothing, and the next refresh
// took the override's own rows for external DML, wherever the DML was.
// After a rewrite of the whole window, whose rows are counted as a whole,
// DML that removed some of them cannot be placed: then the override stores
// nothing, as before, and the next refresh reports it (documented).
func TestOverrideKeepsExternalChangePerPartition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dml string
		later     bool // the next refresh is a day later: 03-08 has left the window
		// external: the next refresh reports EXTERNAL_CHANGE_IN_REPLACE_WINDOW
		// after fingerprints, after a rewrite of the whole window
		external, externalAfterRewrite bool
	}{
		{name: "DML on another day", dml: `UPDATE %s SET v = -v WHERE d = '2026-03-08' AND k = 'a'`, external: true, externalAfterRewrite: true},
		{name: "a day emptied", dml: `DELETE FROM %s WHERE d = '2026-03-08'`, external: true, externalAfterRewrite: true},
		{name: "a row inserted on a day that has left the window", dml: `INSERT INTO %s VALUES ('2026-03-08', 'dml', 1)`, later: true},
		{name: "DML on a day that has left the window", dml: `UPDATE %s SET v = -v WHERE d = '2026-03-08' AND k = 'a'`, later: true, externalAfterRewrite: true},
		{name: "DML on the day recomputed", dml: `UPDATE %s SET v = -v WHERE d = '2026-03-10' AND k = 'a'`, externalAfterRewrite: true},
	} {
		for _, rewrite := range []bool{false, true} {
			name := tc.name + ", after fingerprints"
			if rewrite {
				name = tc.name + ", after a rewrite"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newDailyScenario(t)
				s.refresh() // the window rewritten whole: a mark
				if !rewrite {
					expectPartitions(t, s.refresh()) // fingerprints
				}
				s.dml(tc.dml)
				checkOutcome(t, s.run(run.Override, `d == date('2026-03-10')`), compile.ActionBackfill, compile.ReasonBackfill)
				if tc.later {
					s.now = at(1)
				}
				res := s.refresh()
				if tc.external && !rewrite || tc.externalAfterRewrite && rewrite {
					checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
					return
				}
				expectPartitions(t, res)
			})
		}
	}
}

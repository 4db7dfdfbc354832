package run_test

import (
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// A refresh that rewrites its window whole does not fingerprint the rows it
// just inserted: it stores how many it inserted, and the next refresh finds
// them by their inserting transaction. Whatever DML touched the window since
// shows as external; what did not (time moving on, a freeze, DML outside
// the window) leaves the next refresh incremental, and that one stores
// fingerprints proper again.
func TestRewrittenWindowCheckedByWriter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		change   func(s *scenario)
		external bool // the next refresh falls back with EXTERNAL_CHANGE_IN_REPLACE_WINDOW
	}{
		{name: "nothing, a day later", change: func(s *scenario) { s.now = at(1) }},
		{name: "frozen", change: func(s *scenario) { s.e.exec(`VACUUM (FREEZE) t`) }},
		{name: "DML outside the window", change: func(s *scenario) {
			s.dml(`INSERT INTO %s VALUES ('2026-03-01', 'dml', 1)`)
		}},
		{name: "a row inserted in the window", external: true, change: func(s *scenario) {
			s.dml(`INSERT INTO %s VALUES ('2026-03-09', 'dml', 1)`)
		}},
		{name: "a row of rwc's deleted", external: true, change: func(s *scenario) {
			s.dml(`DELETE FROM %s WHERE d = '2026-03-10' AND k = 'a'`)
		}},
		{name: "a row of rwc's updated to the same values", external: true, change: func(s *scenario) {
			s.dml(`UPDATE %s SET v = v WHERE d = '2026-03-08' AND k = 'b'`)
		}},
		{name: "a row deleted from the day that has left the window since", external: true, change: func(s *scenario) {
			// The rewrite's rows are counted as a whole, not per day: this
			// reads as external, a needless recompute (documented).
			s.now = at(1)
			s.dml(`DELETE FROM %s WHERE d = '2026-03-08' AND k = 'a'`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.seedDaily()
			s := newScenario(t, e, dailySpec)
			checkOutcome(t, s.refresh(), run.ActionCreate, run.FirstRefresh)
			marks := func() (rewritten string, partitions int64) {
				return e.value(`SELECT coalesce((SELECT n || ' rows' FROM rwc.fingerprints WHERE flow = 't' AND source = '' AND whole AND value = 'rewritten'), 'none')`),
					e.count(`SELECT count(*) FROM rwc.fingerprints WHERE flow = 't' AND source = '' AND NOT whole`)
			}
			if rw, parts := marks(); rw != "6 rows" || parts != 0 {
				t.Fatalf("after the window was rewritten whole: mark %s and %d target partitions stored, want 6 rows and none", rw, parts)
			}
			tc.change(s)
			res := s.refresh()
			if tc.external {
				checkOutcome(t, res, compile.ActionRecomputeWindow, compile.ReasonExternalChange)
				return
			}
			expectPartitions(t, res)
			if rw, parts := marks(); rw != "none" || parts == 0 {
				t.Fatalf("after an incremental refresh: mark %s and %d target partitions stored, want fingerprints", rw, parts)
			}
			expectPartitions(t, s.refresh())
		})
	}
}

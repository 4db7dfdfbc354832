package run

import (
	"database/sql"
	"testing"
)

// Who vacuums a target, and what autovacuum settings rwc gives it, for
// each kind of server and table settings.
func TestVacuumPolicy(t *testing.T) {
	on := sql.NullBool{Bool: true, Valid: true}
	off := sql.NullBool{Valid: true}
	zero := sql.NullFloat64{Valid: true}
	tuned := sql.NullFloat64{Float64: 0.05, Valid: true}
	at := func(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: true} }
	plain := vacuumSettings{server: true, plain: true, owned: true}
	rwcs := func(n int64) func(*vacuumSettings) {
		return func(s *vacuumSettings) { s.scale, s.threshold, s.delay = zero, at(n), zero }
	}
	with := func(fs ...func(*vacuumSettings)) vacuumSettings {
		s := plain
		for _, f := range fs {
			f(&s)
		}
		return s
	}
	const all = "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 252000, autovacuum_vacuum_cost_delay = 0"
	for _, c := range []struct {
		name   string
		s      vacuumSettings
		window int64
		by     string
		alter  string
		now    int64
	}{
		{"new target: four windows' worth, unthrottled", plain, 63000, "autovacuum", all, 0},
		{"a small window: the floor of 1000 rows", plain, 10, "autovacuum", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 4000, autovacuum_vacuum_cost_delay = 0", 0},
		{"rwc's settings, window within a factor of two: left", with(rwcs(252000)), 40000, "autovacuum", "", 252000},
		{"rwc's settings, window grew past twice: set again", with(rwcs(4000)), 63000, "autovacuum", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 252000", 4000},
		{"rwc's settings, window shrank below half: set again", with(rwcs(252000)), 10000, "autovacuum", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 40000", 252000},
		{"the user's cost delay: kept", with(rwcs(4000), func(s *vacuumSettings) { s.delay = sql.NullFloat64{Float64: 10, Valid: true} }), 63000, "autovacuum", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 252000", 4000},
		{"no cost delay yet: set alone", with(rwcs(252000), func(s *vacuumSettings) { s.delay = sql.NullFloat64{} }), 63000, "autovacuum", "autovacuum_vacuum_cost_delay = 0", 252000},
		{"a threshold without scale factor: rwc's to set", with(func(s *vacuumSettings) { s.threshold = at(252000) }), 63000, "autovacuum", all, 252000},
		{"autovacuum enabled on the table: rwc's to set", with(func(s *vacuumSettings) { s.enabled = on }), 63000, "autovacuum", all, 0},
		{"the user's scale factor: left alone", with(func(s *vacuumSettings) { s.scale, s.threshold = tuned, at(50) }), 63000, "autovacuum", "", 0},
		{"not rwc's table: left alone", with(func(s *vacuumSettings) { s.owned = false }), 63000, "autovacuum", "", 0},
		{"autovacuum off on the table: rwc vacuums", with(func(s *vacuumSettings) { s.enabled = off }), 63000, "rwc", "", 0},
		{"autovacuum off on the server: rwc vacuums", with(func(s *vacuumSettings) { s.server = false }), 63000, "rwc", "", 0},
		{"partitioned: rwc vacuums", with(func(s *vacuumSettings) { s.plain = false }), 63000, "rwc", "", 0},
		{"a huge window: the threshold an int4 holds", plain, 1 << 40, "autovacuum", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2147483647, autovacuum_vacuum_cost_delay = 0", 0},
	} {
		v, alter := vacuumPolicy(c.s, c.window)
		if v.By != c.by || alter != c.alter || v.Threshold != c.now || v.Why == "" {
			t.Errorf("%s: by %s (%s), threshold now %d, alter %q; want by %s, now %d, alter %q", c.name, v.By, v.Why, v.Threshold, alter, c.by, c.now, c.alter)
		}
	}
}

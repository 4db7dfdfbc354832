package run

import (
	"database/sql"
	"testing"
)

// Who vacuums a target, and what threshold rwc sets, for each kind of
// server and table settings.
func TestVacuumPolicy(t *testing.T) {
	on := sql.NullBool{Bool: true, Valid: true}
	off := sql.NullBool{Valid: true}
	zero := sql.NullFloat64{Valid: true}
	tuned := sql.NullFloat64{Float64: 0.05, Valid: true}
	at := func(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: true} }
	plain := vacuumSettings{server: true, plain: true, owned: true}
	with := func(f func(*vacuumSettings)) vacuumSettings { s := plain; f(&s); return s }
	for _, c := range []struct {
		name     string
		s        vacuumSettings
		window   int64
		by       string
		set, now int64
	}{
		{"new target: rwc sets four windows' worth", plain, 63000, "autovacuum", 252000, 0},
		{"a small window: the floor of 1000 rows", plain, 10, "autovacuum", 4000, 0},
		{"rwc's threshold, window within a factor of two: left", with(func(s *vacuumSettings) { s.scale, s.threshold = zero, at(252000) }), 40000, "autovacuum", 0, 252000},
		{"rwc's threshold, window grew past twice: set again", with(func(s *vacuumSettings) { s.scale, s.threshold = zero, at(4000) }), 63000, "autovacuum", 252000, 4000},
		{"rwc's threshold, window shrank below half: set again", with(func(s *vacuumSettings) { s.scale, s.threshold = zero, at(252000) }), 10000, "autovacuum", 40000, 252000},
		{"a threshold without scale factor: rwc's to set", with(func(s *vacuumSettings) { s.threshold = at(252000) }), 63000, "autovacuum", 252000, 252000},
		{"autovacuum enabled on the table: rwc's to set", with(func(s *vacuumSettings) { s.enabled = on }), 63000, "autovacuum", 252000, 0},
		{"the user's scale factor: left alone", with(func(s *vacuumSettings) { s.scale, s.threshold = tuned, at(50) }), 63000, "autovacuum", 0, 0},
		{"not rwc's table: left alone", with(func(s *vacuumSettings) { s.owned = false }), 63000, "autovacuum", 0, 0},
		{"autovacuum off on the table: rwc vacuums", with(func(s *vacuumSettings) { s.enabled = off }), 63000, "rwc", 0, 0},
		{"autovacuum off on the server: rwc vacuums", with(func(s *vacuumSettings) { s.server = false }), 63000, "rwc", 0, 0},
		{"partitioned: rwc vacuums", with(func(s *vacuumSettings) { s.plain = false }), 63000, "rwc", 0, 0},
		{"a huge window: the threshold an int4 holds", plain, 1 << 40, "autovacuum", 1<<31 - 1, 0},
	} {
		v, set := vacuumPolicy(c.s, c.window)
		if v.By != c.by || set != c.set || v.Threshold != c.now || v.Why == "" {
			t.Errorf("%s: by %s (%s), threshold now %d, set %d; want by %s, now %d, set %d", c.name, v.By, v.Why, v.Threshold, set, c.by, c.now, c.set)
		}
	}
}

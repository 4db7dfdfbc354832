package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/rwc-dev/rwc/compile"
)

// deadRowsPerWindow is how many dead row versions, in windows' worth of
// rows, a target may hold before it is vacuumed: each DELETE leaves its
// rows dead, and the next refresh's DELETE and probes step over them again.
// Each window's worth costs the next refresh about 2% (measured in
// docs/benchmarks.md), so four keep the slowest refresh within 10% of a
// freshly vacuumed one; vacuuming after every refresh would cost each
// refresh a VACUUM instead, a fifth of a whole-window recompute.
const deadRowsPerWindow = 4

// vacuumCount is how many times the table $2 was vacuumed, by anyone, as
// the server counts (0 with track_counts off). The functions behind
// pg_stat_user_tables, called alone: planning the view costs a few
// milliseconds of every refresh.
const vacuumCount = `coalesce(pg_stat_get_vacuum_count(to_regclass($2)) + pg_stat_get_autovacuum_count(to_regclass($2)), 0)`

// vacuumSettingsSQL reads what decides who vacuums the table c (a pg_class
// row, NULL when the target is missing): whether the server's autovacuum
// runs, the table's kind, whether rwc's role owns it (and so may set them),
// and its own autovacuum settings, parsed by the server (a boolean
// reloption may be spelled off, no, 0, false).
const vacuumSettingsSQL = `current_setting('autovacuum')::bool AND current_setting('track_counts')::bool,
	coalesce(c.relkind = 'r', false), coalesce(pg_has_role(c.relowner, 'USAGE'), false),
	(SELECT option_value::bool FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_enabled'),
	(SELECT option_value::float8 FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_vacuum_scale_factor'),
	(SELECT option_value::bigint FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_vacuum_threshold'),
	(SELECT option_value::float8 FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_vacuum_cost_delay')`

// vacuumSettings is what vacuumSettingsSQL read.
type vacuumSettings struct {
	server, plain, owned bool
	enabled              sql.NullBool
	scale, delay         sql.NullFloat64
	threshold            sql.NullInt64
}

func (s *vacuumSettings) dest() []any {
	return []any{&s.server, &s.plain, &s.owned, &s.enabled, &s.scale, &s.threshold, &s.delay}
}

// Vacuum is who keeps a flow's target vacuumed, and when.
type Vacuum struct {
	By string `json:"by"` // "autovacuum" or "rwc"
	// Threshold: the dead rows at which autovacuum vacuums the target, as
	// rwc set it (0: not set yet, or not rwc's to set).
	Threshold int64  `json:"threshold,omitempty"`
	Why       string `json:"why"`
}

// vacuumPolicy decides who vacuums a target of window rows, and the
// autovacuum settings rwc gives it (alter: ALTER TABLE … SET's list, ""
// for none). rwc takes autovacuum's settings on a target as its own unless
// they give a scale factor other than 0, which a user who tunes the table
// sets: those it leaves alone. It sets the threshold when it is not within
// a factor of two of what it wants (so that a window that varies a little
// does not alter the table at every refresh), and no cost delay, so that
// autovacuum vacuums as rwc's own VACUUM did, unthrottled, and keeps up
// with refreshes that come faster than a throttled VACUUM of the index
// (a cost delay the table has is kept). rwc vacuums itself only where
// autovacuum would not: a server or a table with it off, a partitioned
// target (it has no autovacuum settings; only the partitions its
// refreshes cut leave dead rows).
func vacuumPolicy(s vacuumSettings, window int64) (v Vacuum, alter string) {
	want := min(vacuumAt(window), 1<<31-1)
	switch {
	case !s.plain:
		return Vacuum{By: "rwc", Why: "a partitioned target: only the partitions a refresh cuts leave dead rows"}, ""
	case !s.server:
		return Vacuum{By: "rwc", Why: "autovacuum is off on the server"}, ""
	case s.enabled.Valid && !s.enabled.Bool:
		return Vacuum{By: "rwc", Why: "autovacuum_enabled is off on the table"}, ""
	case !s.owned:
		return Vacuum{By: "autovacuum", Why: "the table's own settings: rwc does not own the target, so cannot set them"}, ""
	case s.scale.Valid && s.scale.Float64 != 0:
		return Vacuum{By: "autovacuum", Why: "the table's own settings, with a scale factor other than 0, which rwc leaves alone"}, ""
	}
	v = Vacuum{By: "autovacuum", Threshold: s.threshold.Int64, Why: "four windows' worth, set by rwc"}
	if s.delay.Valid && s.delay.Float64 == 0 {
		v.Why += ", unthrottled"
	}
	if !s.scale.Valid || !s.threshold.Valid {
		v.Why = "rwc sets its threshold, four windows' worth of dead rows, at the next refresh"
	}
	var opts []string
	if !s.scale.Valid || !s.threshold.Valid || s.threshold.Int64 < want/2 || s.threshold.Int64 > 2*want {
		opts = append(opts, "autovacuum_vacuum_scale_factor = 0", fmt.Sprintf("autovacuum_vacuum_threshold = %d", want))
	}
	if !s.delay.Valid {
		opts = append(opts, "autovacuum_vacuum_cost_delay = 0")
	}
	return v, strings.Join(opts, ", ")
}

// vacuumAt is the dead rows at which a target of window rows is vacuumed,
// by rwc or by autovacuum.
func vacuumAt(window int64) int64 { return deadRowsPerWindow * max(window, 1000) }

// churn is what a refresh left for VACUUM to clean.
type churn struct {
	dead   int64 // dead row versions rwc's refreshes left since the last VACUUM
	vacuum bool  // vacuum now
}

// trackChurn adds the rows a refresh deleted to the dead row versions its
// flow's refreshes left in the target since the table was last vacuumed
// (by rwc or autovacuum: PostgreSQL counts both, at once), records it, and
// says whether rwc vacuums after the commit: when autovacuum does not
// (vacuumPolicy), and when a window's worth of rows is dead four times
// over. When autovacuum does, it gives the target the threshold
// vacuumPolicy wants, in the refresh's transaction: the target's catalog
// row changes, and the capture's token of it (stored after) must see that
// as the refresh's own. window is the rows the window holds now; own says
// it is the flow's window (not a backfill's range, whose size says nothing
// of the next refreshes'). A created target is vacuumed (and analysed) once.
func trackChurn(ctx context.Context, tx *sql.Tx, f *compile.Flow, res *Result, window int64, own bool) (churn, error) {
	var dead, seen, vacuums int64
	var s vacuumSettings
	err := tx.QueryRowContext(ctx, `SELECT f.dead_rows, f.vacuums, `+vacuumCount+`, `+vacuumSettingsSQL+`
		FROM rwc.flows f LEFT JOIN pg_class c ON c.oid = to_regclass($2) WHERE f.flow = $1`,
		f.Name(), f.Target()).Scan(append([]any{&dead, &seen, &vacuums}, s.dest()...)...)
	if err != nil {
		return churn{}, err
	}
	if vacuums != seen {
		dead = 0 // vacuumed since: what was dead then is gone
	}
	// A full refresh's DELETE leaves every row it deleted dead, the whole
	// table's: counted like a window's, they bring the VACUUM forward by
	// as many windows' worth.
	c := churn{dead: dead + res.RowsDeleted - res.swapped + res.deadAgain}
	policy, alter := vacuumPolicy(s, window)
	due := policy.By == "rwc" && c.dead > 0 && c.dead >= vacuumAt(window)
	c.vacuum = res.Action == compile.ActionCreate || due
	if alter != "" && own {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+f.Target()+` SET (`+alter+`)`); err != nil {
			return churn{}, err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE rwc.flows SET dead_rows = $2, vacuums = $3 WHERE flow = $1`, f.Name(), c.dead, vacuums)
	return c, err
}

// vacuum runs after the commit (VACUUM cannot run in a transaction) when
// trackChurn asked for it; a failure is reported but does not fail the
// refresh, whose data is committed. A plain VACUUM reads only the pages
// refreshes dirtied (the visibility map skips the rest); ANALYZE would
// sample the whole table every time, so it runs once, on a created target,
// and autovacuum keeps statistics after.
func (r *Runner) vacuum(ctx context.Context, conn *sql.Conn, f *compile.Flow, res *Result, c churn) {
	if !c.vacuum {
		return
	}
	// TRUNCATE false: the empty pages a window's DELETE leaves at the end
	// of the table are the ones its INSERT fills again; giving them back
	// costs an exclusive lock and a backward scan, then an extension.
	stmt := "VACUUM (TRUNCATE false) "
	if res.Action == compile.ActionCreate {
		stmt = "VACUUM (ANALYZE, TRUNCATE false) "
	}
	if _, err := conn.ExecContext(ctx, stmt+f.Target()); err != nil {
		err = lockTimeout(ctx, r.db, "", flowRels(f)[:1], r.opts.LockTimeout, "it is vacuumed after a later refresh", err)
		fmt.Fprintf(r.opts.Log, "%s: VACUUM %s skipped: %v\n", f.Name(), f.Target(), err)
		return
	}
	// Start counting again, whether or not the server counts vacuums
	// (track_counts off).
	if _, err := conn.ExecContext(ctx, `UPDATE rwc.flows SET dead_rows = 0, vacuums = `+vacuumCount+` WHERE flow = $1`,
		f.Name(), f.Target()); err != nil {
		fmt.Fprintf(r.opts.Log, "%s: after VACUUM: %v\n", f.Name(), err)
	}
}

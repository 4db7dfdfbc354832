package run

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/rwc-dev/rwc/compile"
)

// deadRowsPerWindow is how many dead row versions, in windows' worth of
// rows, rwc lets its refreshes leave in a target before it vacuums it: each
// DELETE leaves its rows dead, and the next refresh's DELETE and probes step
// over them again. Each window's worth costs the next refresh about 2%
// (measured in docs/benchmarks.md), so four keep the slowest refresh within
// 10% of a freshly vacuumed one; vacuuming after every refresh would cost
// each refresh a VACUUM instead, a fifth of a whole-window recompute.
const deadRowsPerWindow = 4

// vacuumCount is how many times the table $2 was vacuumed, by anyone, as
// the server counts (0 with track_counts off). The functions behind
// pg_stat_user_tables, called alone: planning the view costs a few
// milliseconds of every refresh.
const vacuumCount = `coalesce(pg_stat_get_vacuum_count(to_regclass($2)) + pg_stat_get_autovacuum_count(to_regclass($2)), 0)`

// churn is what a refresh left for VACUUM to clean.
type churn struct {
	dead   int64 // dead row versions rwc's refreshes left since the last VACUUM
	vacuum bool  // vacuum now
}

// trackChurn adds the rows a refresh deleted to the dead row versions its
// flow's refreshes left in the target since the table was last vacuumed
// (by rwc or autovacuum: PostgreSQL counts both, at once), records it, and
// says whether to vacuum after the commit. window is the rows the window
// holds now. A created target is vacuumed (and analysed) once.
func trackChurn(ctx context.Context, tx *sql.Tx, f *compile.Flow, res *Result, window int64) (churn, error) {
	var dead, seen, vacuums int64
	err := tx.QueryRowContext(ctx, `SELECT dead_rows, vacuums, `+vacuumCount+` FROM rwc.flows WHERE flow = $1`,
		f.Name(), f.Target()).Scan(&dead, &seen, &vacuums)
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
	c.vacuum = res.Action == compile.ActionCreate || c.dead > 0 && c.dead >= deadRowsPerWindow*max(window, 1000)
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

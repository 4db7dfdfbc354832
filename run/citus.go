package run

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
)

// hasCitus is whether the database has Citus, as SQL.
const hasCitus = `to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`

// observeCitus reads whether the database has Citus and, if so, the
// tables' distribution (observeDistribution).
func observeCitus(ctx context.Context, tx *sql.Tx, f *compile.Flow, obs *compile.Observation) error {
	if err := tx.QueryRowContext(ctx, `SELECT `+hasCitus).Scan(&obs.Citus); err != nil || !obs.Citus {
		return err
	}
	return observeDistribution(ctx, tx, f, obs)
}

// observeDistribution reads which of f's tables (its sources and its
// target) are Citus tables, distributed or reference, into obs. A snapshot
// exported on the coordinator does not cover them: on a worker, another
// session's snapshot is its own (see docs/citus.md), so the refresh probes
// them in its own transaction. That transaction's probes reach the
// workers, so it is paced first (paceCitus).
func observeDistribution(ctx context.Context, tx *sql.Tx, f *compile.Flow, obs *compile.Observation) error {
	if err := paceCitus(ctx, tx); err != nil {
		return err
	}
	var dist []string
	err := tx.QueryRowContext(ctx, `SELECT coalesce(array_agg(r ORDER BY r), '{}') FROM unnest($1::text[]) r
		WHERE EXISTS (SELECT 1 FROM pg_dist_partition d WHERE d.logicalrelid = to_regclass(r))`, pq.Array(f.CaptureTables())).Scan(pq.Array(&dist))
	if err != nil {
		return err
	}
	obs.Distributed = dist
	// The target's distribution, to compare with the spec's.
	return tx.QueryRowContext(ctx, `SELECT coalesce((SELECT CASE WHEN d.partmethod = 'n' THEN 'reference' ELSE column_to_column_name(d.logicalrelid, d.partkey) END
		FROM pg_dist_partition d WHERE d.logicalrelid = to_regclass($1)), '')`, f.Target()).Scan(&obs.TargetDistribution)
}

// CitusSlowStart is how long Citus's executor waits, within one of the
// refresh's statements, before it opens one more connection to a worker
// that still has shards to do (Citus's default: 10ms). Every rwc process
// starts with no connection to the workers, and a new one costs a worker
// a backend and a cold catalog for each shard it reads, tens of
// milliseconds, where a window's shard takes about one: at Citus's pace a
// probe opened several to each worker and waited for them all. A statement
// whose shards take long still gets its parallel connections, after this
// (docs/citus.md has the figures).
const CitusSlowStart = "100ms"

// paceCitus sets CitusSlowStart for tx (a refresh's, or rwc plan's
// probes) when the pace is Citus's default, and leaves one that the role,
// the database, the server's configuration or the session chose. Citus hides the setting from
// pg_settings, so its source cannot be read: its value is compared.
func paceCitus(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT set_config('citus.executor_slow_start_interval', $1, true)
		WHERE current_setting('citus.executor_slow_start_interval', true) = '10ms'`, CitusSlowStart)
	return err
}

// distributeError positions Citus's refusal to distribute a new target.
func distributeError(f *compile.Flow, err error) error {
	return fmt.Errorf("flow %s: distribution: (%s): Citus did not distribute the target: %s; the refresh was rolled back and nothing was changed", f.Name(), f.Table.Distribution.Pos, serverWords(err))
}

// captureObservation is what a capture outside a refresh (rwc plan,
// --explain, status) needs of the catalog: the target's partitions, and
// the tables Citus distributes.
func captureObservation(ctx context.Context, tx *sql.Tx, f *compile.Flow) (compile.Observation, error) {
	obs, err := partitionsNow(ctx, tx, f)
	if err != nil {
		return obs, err
	}
	return obs, observeCitus(ctx, tx, f, &obs)
}

// refuseCitusWorker refuses a database that is a Citus worker's (its
// group is not the coordinator's): rwc's state and the flows' tables are
// on the coordinator, a worker holds shards of them, and a plan there
// would show no deployment. Read only where no state was found.
func refuseCitusWorker(ctx context.Context, q queryer) error {
	var citus bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL`).Scan(&citus); err != nil || !citus {
		return err
	}
	var worker bool
	if err := q.QueryRowContext(ctx, `SELECT coalesce((SELECT groupid <> 0 FROM pg_dist_local_group), false)`).Scan(&worker); err != nil || !worker {
		return err
	}
	return refuse("this database is a Citus worker's (its group is not the coordinator's): rwc plans and applies on the coordinator, where its state and the flows' tables are; point --dsn at the coordinator's database (nothing was changed)")
}

// citusSchemaFirst creates, on Citus, the schema of a target about to be
// created, before the refresh's transaction (conn, no transaction open):
// Citus propagates CREATE SCHEMA to the workers and refuses it, even IF
// NOT EXISTS of a schema that is there, in a transaction that has read a
// distributed table in parallel, as the refresh's has by the time it
// creates the target; and created on another connection meanwhile, the
// schema would stay unseen by that transaction's catalog caches. The
// schema, empty, stays if the refresh then fails.
func citusSchemaFirst(ctx context.Context, conn *sql.Conn, f *compile.Flow) error {
	var first bool
	if err := conn.QueryRowContext(ctx, `SELECT `+hasCitus+` AND to_regclass($1) IS NULL`, f.Target()).Scan(&first); err != nil || !first {
		return err
	}
	_, err := conn.ExecContext(ctx, f.CreateSchemaSQL())
	return err
}

// adoptRecreated adopts a target that Citus gave a new table id
// (compile.Flow.TargetAdoption) when the new table holds, within the
// window its fingerprints were stored for, exactly as many rows as rwc
// left there; otherwise it refuses it, with both counts. The fingerprints
// themselves no longer match (the copy rewrote every row), so the refresh
// recomputes the window.
func adoptRecreated(ctx context.Context, tx *sql.Tx, f *compile.Flow, st *compile.FlowState, obs compile.Observation, log io.Writer) error {
	left, now, ok, err := windowRows(ctx, tx, f, st, obs)
	switch {
	case err != nil:
		return err
	case !ok:
		return refuse("table %s has a new table id, and rwc stored no count of the rows it left there to verify it by (%s): rwc refuses to adopt it; drop it and rwc will create and fill it",
			f.Target(), f.Table.Pos)
	case left != now:
		return refuse("table %s has a new table id and holds %d rows in the window where rwc left %d (%s): rwc refuses to adopt it; if Citus recreated it (alter_distributed_table), put the rows back, or drop it and rwc will create and fill it",
			f.Target(), now, left, f.Table.Pos)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rwc.flows SET target_oid = $2 WHERE flow = $1`, f.Name(), obs.TargetOID); err != nil {
		return err
	}
	fmt.Fprintf(log, "%s: %s has a new table id (%d, was %d), as Citus's alter_distributed_table leaves it, and holds the %d rows rwc left in its window: adopted; its window is recomputed\n",
		f.Name(), f.Target(), obs.TargetOID, st.TargetOID, now)
	st.TargetOID, st.TargetGone = obs.TargetOID, false
	return nil
}

// windowRows counts the target's rows in the window its fingerprints were
// stored for (now) and those the fingerprints count (left); ok is false
// when none were stored.
func windowRows(ctx context.Context, tx *sql.Tx, f *compile.Flow, st *compile.FlowState, obs compile.Observation) (left, now int64, ok bool, err error) {
	prior, ok := f.StoredWindow(*st)
	if !ok {
		return 0, 0, false, nil
	}
	stored, err := loadFingerprints(ctx, tx, f.Name())
	if err != nil || !stored.taken {
		return 0, 0, false, err
	}
	rows, err := probeTarget(ctx, tx, f, prior, stored, prior, obs)
	if err != nil {
		return 0, 0, false, err
	}
	for _, r := range rows {
		if r.inWindow {
			now += r.n
		}
	}
	return stored.targetRows(), now, true, nil
}

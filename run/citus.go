package run

import (
	"context"
	"database/sql"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
)

// observeCitus reads whether the database has Citus and, if so, which of
// f's tables (its sources and its target) are Citus tables, distributed or
// reference, into obs. A snapshot exported on the coordinator does not
// cover them: on a worker, another session's snapshot is its own (see
// docs/citus.md), so the refresh probes them in its own transaction.
func observeCitus(ctx context.Context, q queryer, f *compile.Flow, obs *compile.Observation) error {
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`).Scan(&obs.Citus); err != nil || !obs.Citus {
		return err
	}
	var dist []string
	err := q.QueryRowContext(ctx, `SELECT coalesce(array_agg(r ORDER BY r), '{}') FROM unnest($1::text[]) r
		WHERE EXISTS (SELECT 1 FROM pg_dist_partition d WHERE d.logicalrelid = to_regclass(r))`, pq.Array(f.CaptureTables())).Scan(pq.Array(&dist))
	obs.Distributed = dist
	return err
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

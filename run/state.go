// Package run executes refreshes on PostgreSQL and keeps rwc's state there:
// the schema rwc, with the deployed revision, each flow's last refresh and
// the event log.
package run

import (
	"context"
	"database/sql"
	"fmt"
)

// stateVersion is the newest state schema this rwc knows. Migrations only
// add (or drop what can no longer be read); an older rwc refuses a newer state rather than misreading it.
const stateVersion = 5

// migrations[i] takes the state schema from version i to i+1.
var migrations = []string{
	`CREATE TABLE rwc.deployments (
		id          bigserial PRIMARY KEY,
		commit      text,
		dirty       boolean NOT NULL DEFAULT false,
		deployed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		deployed_by text NOT NULL,
		specs       jsonb NOT NULL
	);
	CREATE TABLE rwc.flows (
		flow              text PRIMARY KEY,
		pipeline          text NOT NULL,
		target_schema     text NOT NULL,
		target_table      text NOT NULL,
		target_oid        oid NOT NULL,
		columns           jsonb NOT NULL,
		query_fingerprint text NOT NULL,
		predicate_cel     text,
		predicate_sql     text,
		env_version       integer,
		determinism       text,
		last_refresh_at   timestamptz,
		created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
		UNIQUE (target_schema, target_table)
	);
	CREATE TABLE rwc.events (
		id            bigserial PRIMARY KEY,
		flow          text NOT NULL,
		kind          text NOT NULL DEFAULT 'planning_information',
		action        text NOT NULL,
		reasons       text[] NOT NULL DEFAULT '{}',
		predicate_cel text,
		predicate_sql text,
		rows_deleted  bigint,
		rows_inserted bigint,
		started_at    timestamptz NOT NULL,
		duration_ms   bigint NOT NULL,
		error         text,
		details       jsonb NOT NULL DEFAULT '{}'
	);
	CREATE INDEX events_flow ON rwc.events (flow, id);`,
	// 2: per-partition fingerprints of sources and targets, for incremental refresh.
	`CREATE TABLE rwc.fingerprints (
		flow   text NOT NULL,
		source text NOT NULL,       -- '' is the target
		whole  boolean NOT NULL,    -- a source fingerprinted as a whole
		value  text NOT NULL,       -- the partition value as PostgreSQL prints it
		n      bigint NOT NULL,
		h      bigint NOT NULL,
		PRIMARY KEY (flow, source, whole, value)
	);`,
	// 3: the backfill ledger: each backfill file applied exactly once, in
	// batches that are recorded as they commit.
	`CREATE TABLE rwc.backfills (
		path          text PRIMARY KEY,
		content_hash  text NOT NULL,
		flow          text NOT NULL,
		reason        text NOT NULL,
		commit        text,
		rows_deleted  bigint NOT NULL DEFAULT 0,
		rows_inserted bigint NOT NULL DEFAULT 0,
		started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
		finished_at   timestamptz
	);
	CREATE TABLE rwc.backfill_batches (
		path          text NOT NULL REFERENCES rwc.backfills ON DELETE CASCADE,
		batch         integer NOT NULL,
		predicate_cel text NOT NULL,
		rows_deleted  bigint,
		rows_inserted bigint,
		committed_at  timestamptz,
		PRIMARY KEY (path, batch)
	);`,
	// 4: fingerprints hash row versions another way (compile.versionHash):
	// the old ones cannot be compared, so each flow's next refresh
	// recomputes its window, as after an upgrade from before fingerprints.
	// And the dead row versions refreshes left in each target since it was
	// last vacuumed (vacuums: the table's VACUUM count then), so that rwc
	// vacuums when they add up rather than after every refresh.
	`DELETE FROM rwc.fingerprints;
	ALTER TABLE rwc.flows ADD COLUMN dead_rows bigint NOT NULL DEFAULT 0,
		ADD COLUMN vacuums bigint NOT NULL DEFAULT 0;`,
	// 5: the partitions of a partial rewrite carry the rows inserted in each
	// (rewrittenCounted), which an rwc of version 4 would take for a rewrite
	// of the whole window, and then could miss a partition emptied by DML:
	// it must refuse this state instead. Version 4 listed them without
	// counts (n = -1): those flows' fingerprints are cleared, so that each
	// one's next refresh recomputes its window once, as after migration 4.
	`DELETE FROM rwc.fingerprints WHERE flow IN
		(SELECT flow FROM rwc.fingerprints WHERE source = '' AND NOT whole AND n = -1);`,
}

// migrateLock serialises concurrent migrations (two `rwc apply` at once on
// a fresh database) on one advisory lock.
const migrateLock = 0x7277630001 // "rwc" 0001

// Migrate creates or upgrades the state schema. It is idempotent and safe to
// run concurrently.
func Migrate(ctx context.Context, db *sql.DB) (err error) {
	defer func() { err = lockTimeout(ctx, db, "rwc's state schema", stateRels, 0, "nothing was changed", err) }()
	var version int
	if err := db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return err
	}
	if err := checkServerVersion(version); err != nil {
		return err
	}
	// The usual case, the state already current, reads it without a lock
	// or a write; anything else (no state yet, an old one, an error) takes
	// the locked path below.
	var current int
	if err := db.QueryRowContext(ctx, `SELECT version FROM rwc.schema_version`).Scan(&current); err == nil && current == stateVersion {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("state schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS rwc;
		CREATE TABLE IF NOT EXISTS rwc.schema_version (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("state schema: %w", err)
	}
	var v int
	err = tx.QueryRowContext(ctx, `SELECT version FROM rwc.schema_version`).Scan(&v)
	switch {
	case err == sql.ErrNoRows:
		if _, err := tx.ExecContext(ctx, `INSERT INTO rwc.schema_version VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("state schema: %w", err)
	}
	if v > stateVersion {
		return fmt.Errorf("the database's rwc state is version %d, newer than this rwc understands (%d): upgrade rwc", v, stateVersion)
	}
	for ; v < stateVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("state schema migration %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rwc.schema_version SET version = $1`, stateVersion); err != nil {
		return err
	}
	return tx.Commit()
}

// StateExists reports whether the database has rwc's state at all, without
// creating it: rwc plan only reads.
func StateExists(ctx context.Context, db *sql.DB) (bool, error) {
	var ok bool
	err := db.QueryRowContext(ctx, `SELECT to_regclass('rwc.schema_version') IS NOT NULL AND to_regclass('rwc.flows') IS NOT NULL`).Scan(&ok)
	return ok, err
}

// minServerVersion is the oldest PostgreSQL rwc runs on: fingerprints hash
// tids with hashtidextended (14), and the state uses nothing newer.
const minServerVersion = 140000

// checkServerVersion refuses a server older than minServerVersion, before
// rwc changes anything in it.
func checkServerVersion(num int) error {
	if num < minServerVersion {
		return fmt.Errorf("the database runs PostgreSQL %d (server_version_num %d); rwc needs PostgreSQL %d or newer (nothing was changed)",
			num/10000, num, minServerVersion/10000)
	}
	return nil
}

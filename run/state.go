// Package run executes refreshes on PostgreSQL and keeps rwc's state there:
// the schema rwc, with the deployed revision, each flow's last refresh and
// the event log.
package run

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"
)

// stateVersion is the newest state schema this rwc knows. Migrations only
// add (or drop what can no longer be read); an older rwc refuses a newer state rather than misreading it.
const stateVersion = 8

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
	// 6: the last result of each expectation (run/expectations.go), for
	// rwc status; each refresh's results are in its event too.
	`CREATE TABLE rwc.expectation_results (
		flow         text NOT NULL,
		name         text NOT NULL,
		kind         text NOT NULL,
		severity     text NOT NULL,
		at           text NOT NULL,
		passed       boolean NOT NULL,
		failing      bigint NOT NULL,
		checked_rows bigint NOT NULL,
		message      text NOT NULL,
		samples      text[] NOT NULL DEFAULT '{}',
		outcome      text NOT NULL,
		checked_at   timestamptz NOT NULL,
		PRIMARY KEY (flow, name)
	);`,
	// 7: capture: triggers (run/capture_triggers.go). change_log holds one
	// row per transaction that changed a table carrying rwc's trigger;
	// captures, per flow and table, what the last refresh that stored the
	// flow's fingerprints saw of it: its trigger and catalog rows (token),
	// its snapshot, and for the target the refresh's own transaction.
	`CREATE TABLE rwc.change_log (
		relid oid  NOT NULL,
		xid   xid8 NOT NULL,
		PRIMARY KEY (relid, xid)
	);
	CREATE TABLE rwc.captures (
		flow     text NOT NULL,
		relid    oid NOT NULL,
		relation text NOT NULL,
		token    text NOT NULL,
		snapshot pg_snapshot NOT NULL,
		writer   xid8,
		PRIMARY KEY (flow, relid)
	);`,
	// 8: capture: triggers logs partition values (compile.CaptureValueTriggers):
	// per transaction and table, each value of a logged column (by attnum)
	// that the transaction's rows held before or after it.
	`CREATE TABLE rwc.change_values (
		relid  oid  NOT NULL,
		xid    xid8 NOT NULL,
		attnum int2 NOT NULL,
		value  text NOT NULL,
		PRIMARY KEY (relid, xid, attnum, value)
	);`,
}

// migrateLock serialises concurrent migrations (two `rwc apply` at once on
// a fresh database) on one advisory lock.
const migrateLock = 0x7277630001 // "rwc" 0001

// Migrate creates or upgrades the state schema. It is idempotent and safe to
// run concurrently. It checks the schema itself, not only its version
// number: a table, column, key or index that rwc relies on and that is
// missing or altered (dropped by hand, a version lowered) is a StateDamage,
// said in rwc's words before anything runs, and nothing is changed (rwc
// state check says what, rwc state repair mends it).
func Migrate(ctx context.Context, db *sql.DB) error {
	return ReadState(ctx, db).Migrate(ctx, db)
}

// StateRead is what Migrate reads before it takes a lock or writes
// anything: the server's version, the state's, and, when that is this
// rwc's, the state schema (the usual case, which needs nothing more). It
// changes nothing, so a command can read it while it loads its specs, on
// the connection it opens meanwhile, and migrate (StateRead.Migrate) once
// the specs are found sound.
type StateRead struct {
	current bool  // the state is this rwc's version, and intact
	err     error // a refusal (the server's version, a damaged state) or a failed read
}

// ReadState reads what Migrate starts from.
func ReadState(ctx context.Context, db *sql.DB) (read StateRead) {
	defer func() {
		read.err = lockTimeout(ctx, db, "rwc's state schema", stateRels, 0, "nothing was changed", read.err)
	}()
	server, rows, current, ok, err := versions(ctx, db)
	if err == nil {
		err = checkServerVersion(server)
	}
	if err == nil && !ok {
		err = refuseCitusWorker(ctx, db) // no state yet: perhaps the wrong node
	}
	if err != nil || !ok || rows != 1 || current != stateVersion {
		return StateRead{err: err} // anything but a current state takes Migrate's locked path
	}
	cat, err := readCatalog(ctx, db)
	if err != nil {
		return StateRead{err: fmt.Errorf("state schema: %w", err)}
	}
	if ps := cat.schemaProblems(stateVersion); len(ps) > 0 {
		return StateRead{err: damage(current, ps)}
	}
	return StateRead{current: true}
}

// Migrate finishes what ReadState began: nothing more for a current
// state, the refusal for one ReadState refused; anything else (no state
// yet, an old one) is read again under a lock, then created or upgraded.
func (read StateRead) Migrate(ctx context.Context, db *sql.DB) (err error) {
	if read.current || read.err != nil {
		return read.err
	}
	defer func() { err = lockTimeout(ctx, db, "rwc's state schema", stateRels, 0, "nothing was changed", err) }()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("state schema: %w", err)
	}
	cat, err := readCatalog(ctx, tx)
	if err != nil {
		return fmt.Errorf("state schema: %w", err)
	}
	v, err := readVersion(ctx, tx, cat)
	if err != nil {
		return err
	}
	switch {
	case v == noVersion && cat.hasStateTables():
		return damage(v, cat.schemaProblems(stateVersion))
	case v == noVersion:
		// No state yet (or an empty schema rwc): create it from version 0.
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS rwc;
			CREATE TABLE IF NOT EXISTS rwc.schema_version (version integer NOT NULL);
			DELETE FROM rwc.schema_version; INSERT INTO rwc.schema_version VALUES (0)`); err != nil {
			return fmt.Errorf("state schema: %w", err)
		}
		if cat, err = readCatalog(ctx, tx); err != nil {
			return fmt.Errorf("state schema: %w", err)
		}
		v = 0
	case v > stateVersion:
		return fmt.Errorf("the database's rwc state is version %d, newer than this rwc understands (%d): upgrade rwc", v, stateVersion)
	}
	// An old state must be exactly that version's, or the migrations would
	// build on what is not there (or trip over what already is).
	if ps := cat.schemaProblems(v); len(ps) > 0 {
		return damage(v, ps)
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

// versions reads the server's version number and, in the same round
// trip, what rwc.schema_version holds: its rows and highest version (read
// false: it cannot be read, e.g. a state not made yet; then the server's
// version is read alone).
func versions(ctx context.Context, db *sql.DB) (server, rows, current int, read bool, err error) {
	err = db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int, count(*), coalesce(max(version), -1) FROM rwc.schema_version`).
		Scan(&server, &rows, &current)
	if err == nil {
		return server, rows, current, true, nil
	}
	err = db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&server)
	return server, 0, 0, false, err
}

// noVersion is readVersion's answer when rwc.schema_version is missing or empty.
const noVersion = -1

// readVersion reads the state's version number: noVersion when
// rwc.schema_version is missing or empty (and nothing else of the state
// is there, a state not made yet); a StateDamage when it is damaged or
// holds several rows.
func readVersion(ctx context.Context, q queryer, cat *catalog) (int, error) {
	cols, ok := cat.tables["schema_version"]
	if !ok {
		return noVersion, nil
	}
	if c, ok := cols["version"]; !ok || c.typ != "integer" {
		return 0, damage(noVersion, cat.schemaProblems(stateVersion))
	}
	var n, v int
	if err := q.QueryRowContext(ctx, `SELECT count(*), coalesce(max(version), -1) FROM rwc.schema_version`).Scan(&n, &v); err != nil {
		return 0, fmt.Errorf("state schema: %w", err)
	}
	switch {
	case n == 0 && cat.hasStateTables():
		return 0, damage(noVersion, []schemaProblem{{code: "schema_version", object: "rwc.schema_version", text: "rwc.schema_version is empty"}})
	case n == 0:
		return noVersion, nil
	case n > 1:
		return 0, damage(noVersion, []schemaProblem{{code: "schema_version", object: "rwc.schema_version",
			text: fmt.Sprintf("rwc.schema_version holds %d rows, not one", n)}})
	}
	return v, nil
}

// StateExists reports whether the database has rwc's state at all, without
// creating it: rwc plan only reads. A state that is there but damaged
// exists (ReadPlanState then says what is wrong).
func StateExists(ctx context.Context, db *sql.DB) (bool, error) {
	var ok bool
	err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'rwc' AND c.relname = ANY ($1))`, pq.Array(stateTableNames())).Scan(&ok)
	if err == nil && !ok {
		err = refuseCitusWorker(ctx, db)
	}
	return ok, err
}

// verifyState checks the state's schema against its version's without
// changing anything (rwc plan reads a state it does not migrate).
func verifyState(ctx context.Context, db *sql.DB) error {
	cat, err := readCatalog(ctx, db)
	if err != nil {
		return err
	}
	v, err := readVersion(ctx, db, cat)
	if err != nil {
		return err
	}
	switch {
	case v == noVersion && cat.hasStateTables():
		return damage(v, cat.schemaProblems(stateVersion))
	case v == noVersion, v > stateVersion:
		return nil // none yet; a newer one is Migrate's to refuse
	}
	if ps := cat.schemaProblems(v); len(ps) > 0 {
		return damage(v, ps)
	}
	return nil
}

func stateTableNames() []string {
	names := make([]string, len(stateSchema))
	for i, t := range stateSchema {
		names[i] = t.name
	}
	return names
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

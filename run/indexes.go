package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run/session"
)

// targetIndexes reads the oid of the table target (quoted schema.table)
// names (0: none) and its indexes from the catalog, in name order: each
// one's key columns ("" for an expression), method, and whether it is
// unique, the primary key, valid (a failed or cancelled CREATE INDEX
// CONCURRENTLY leaves it invalid) and partial. One row, in one round trip:
// the indexes come as JSON, in CatalogIndex's form.
func targetIndexes(ctx context.Context, q queryer, target string) (uint32, []compile.CatalogIndex, error) {
	var oid uint32
	var raw []byte
	err := q.QueryRowContext(ctx, `SELECT coalesce(to_regclass($1)::oid, 0), coalesce((SELECT json_agg(json_build_object(
			'name', c.relname, 'unique', i.indisunique, 'primary', i.indisprimary, 'valid', i.indisvalid AND i.indisready,
			'using', am.amname, 'partial', i.indpred IS NOT NULL,
			'columns', coalesce((SELECT array_agg(coalesce(a.attname, '') ORDER BY k.n)
				FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
				LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
				WHERE k.n <= i.indnkeyatts), '{}')) ORDER BY c.relname)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE i.indrelid = to_regclass($1)), '[]')`, target).Scan(&oid, &raw)
	if err != nil {
		return 0, nil, err
	}
	var out []compile.CatalogIndex
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, nil, fmt.Errorf("the indexes of %s: %v", target, err)
	}
	return oid, out, nil
}

// syncIndexes brings the indexes of f's target, when it exists and is
// rwc's, to what the spec says (compile decides: Flow.IndexChanges), on
// the connection that holds the flow's lock and before the refresh's
// transaction: CREATE INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY must
// run outside any transaction, and they let readers and writers of the
// target go on while they work. Each statement waits for locks at most the
// lock timeout (the session's). A target the refresh will create gets its
// indexes in that refresh's transaction instead (Statements.CreateIndexes),
// and one whose columns change first gets them after (the refresh calls
// again): an index may be on an added column.
func (r *Runner) syncIndexes(ctx context.Context, conn *sql.Conn, f *compile.Flow) error {
	st, err := loadFlowState(ctx, conn, f.Name())
	if err != nil || !st.Found {
		return err
	}
	oid, have, err := targetIndexes(ctx, conn, f.Target())
	if err != nil {
		return err
	}
	if oid == 0 || oid != st.TargetOID || len(f.ColumnChanges(st.Columns)) > 0 {
		return nil // the refresh creates it, refuses it, or changes its columns first
	}
	// The parent's indexes first: a partitioned index is valid only once
	// every partition has its own attached, so when the parent's match the
	// spec, so do the partitions', and the partitions (a list that grows
	// with the history) need not be read.
	changes := f.IndexChanges(have)
	if !anySQL(changes) {
		return nil
	}
	var obs compile.Observation
	if err := observePartitions(ctx, conn, oid, &obs); err != nil {
		return err
	}
	if obs.Partitioned != f.Partitioned() {
		// The refresh refuses it (partitioningAgrees), before anything
		// changes.
		return nil
	}
	if obs.Partitioned {
		changes = f.PartitionedIndexChanges(have, obs.Partitions)
	}
	if !anySQL(changes) {
		return nil
	}
	// The index changes commit on their own, before the refresh: a query
	// the refresh cannot run (a user's mistake: a source that does not
	// exist, a column it lacks) must stop it first, so that it changes
	// nothing, indexes included.
	if err := r.checkQuery(ctx, conn, f); err != nil {
		return err
	}
	settings := fmt.Sprintf("SET statement_timeout = %d", r.opts.StatementTimeout.Milliseconds())
	for _, s := range session.ParserSettings {
		settings += fmt.Sprintf("; SET %s = %s", s.Name, pq.QuoteLiteral(s.Value))
	}
	for _, c := range changes {
		if len(c.SQL) == 0 {
			continue
		}
		if settings != "" {
			if _, err := conn.ExecContext(ctx, settings); err != nil {
				return err
			}
			settings = ""
		}
		for _, stmt := range c.SQL {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return r.indexFailed(ctx, f, c, err)
			}
		}
		fmt.Fprintf(r.opts.Log, "%s: %s\n", f.Name(), c)
	}
	return nil
}

func anySQL(changes []compile.IndexChange) bool {
	return slices.ContainsFunc(changes, func(c compile.IndexChange) bool { return len(c.SQL) > 0 })
}

// checkQuery describes f's query as the refresh will (observe), in a
// read-only transaction on conn that is rolled back: its error is the
// refresh's.
func (r *Runner) checkQuery(ctx context.Context, conn *sql.Conn, f *compile.Flow) error {
	tx, err := r.begin(ctx, conn)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET TRANSACTION READ ONLY"); err != nil {
		return err
	}
	if _, err := observe(ctx, tx, f); err != nil {
		return queryError(f, err)
	}
	return nil
}

// indexFailed is an index change the server refused or gave up on, in
// rwc's words. The refresh does not run; the target's rows are unchanged.
// A CREATE INDEX CONCURRENTLY that fails leaves its index behind, invalid:
// the next refresh drops it and builds it again (IndexRebuilt).
func (r *Runner) indexFailed(ctx context.Context, f *compile.Flow, c compile.IndexChange, err error) error {
	after := "the refresh did not run and the target's rows are unchanged"
	if c.Kind != compile.IndexDropped {
		after += "; an index build that failed leaves the index invalid, and the next refresh (rwc apply) drops it and builds it again"
	}
	what := fmt.Sprintf("flow %s: index %s %s (%s)", f.Name(), c.Name, strings.ReplaceAll(string(c.Kind), "_", " "), strings.Join(c.Columns, ", "))
	var pe *pq.Error
	if isLockTimeout(err) && errors.As(err, &pe) {
		// A LockTimeoutError inside, so that the refresh's own lock
		// timeout handling leaves this message as it is.
		msg := fmt.Sprintf("%s: CREATE and DROP INDEX CONCURRENTLY wait for every transaction that writes the target or began before them, and rwc gave up after the lock timeout (%s, --lock-timeout)%s; %s: let those transactions end (or end them), then run it again, or raise --lock-timeout",
			what, r.opts.LockTimeout, openTransactions(ctx, r.db), after)
		return &IndexError{err: &LockTimeoutError{PG: pe, msg: msg}, msg: msg}
	}
	msg := fmt.Sprintf("%s failed: %s", what, serverWords(err))
	pos := f.Table.Pos
	for _, ix := range f.Indexes() {
		if ix.Name == c.Name {
			pos = ix.Pos
		}
	}
	if errors.As(err, &pe) && pe.Code == "23514" && pe.Constraint == compile.NotNullCheck {
		msg += fmt.Sprintf(": rows of %s hold NULL in the key's columns (%s), which a primary key makes NOT NULL, outside the window too; fill or delete those rows, or change the key (%s)",
			diag.Visible(pe.Table), strings.Join(c.Columns, ", "), pos)
	}
	if errors.As(err, &pe) && pe.Code == "23505" {
		msg += fmt.Sprintf(": the target's rows already break the key (%s): a unique key holds for every row of the target, outside the window too; remove the duplicates, or change the key (%s)",
			diag.Visible(strings.TrimSuffix(pe.Detail, ".")), pos)
	}
	return &IndexError{msg: msg + "; " + after, err: err}
}

// openTransactions names the oldest transactions open in the database
// (other than the caller's), for a concurrent index build that waited
// for them: ", the oldest open: pid 42 (…); …" ("" when none or unknown).
func openTransactions(ctx context.Context, db *sql.DB) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT pid, coalesce(application_name, ''), coalesce(state, ''),
			to_char(xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'), left(regexp_replace(coalesce(query, ''), '\s+', ' ', 'g'), 100)
		FROM pg_stat_activity
		WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		ORDER BY xact_start LIMIT 3`)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var open []string
	for rows.Next() {
		var pid int
		var app, state, since, query string
		if rows.Scan(&pid, &app, &state, &since, &query) != nil {
			return ""
		}
		open = append(open, fmt.Sprintf("pid %d (application_name %s, %s, in a transaction since %s, query: %s)", pid, diag.Visible(app), state, since, diag.Visible(query)))
	}
	if len(open) == 0 {
		return ""
	}
	return "; the oldest transactions open: " + strings.Join(open, "; ")
}

// IndexError is an index change of a flow that failed before its refresh.
type IndexError struct {
	msg string
	err error
}

func (e *IndexError) Error() string { return e.msg }
func (e *IndexError) Unwrap() error { return e.err }

// KeyViolation is a refresh whose query yields rows that break one of the
// target's unique keys (a duplicate) or its primary key (a NULL in it): the
// refresh rolled back, the target is unchanged.
type KeyViolation struct {
	Flow string
	msg  string
	PG   *pq.Error
}

func (e *KeyViolation) Error() string { return e.msg }
func (e *KeyViolation) Unwrap() error { return e.PG }

// keyViolation is err in rwc's words when it is a violation of one of f's
// keys (nil otherwise): which key, where the spec declares it, and the
// duplicate value the server's detail gives.
func keyViolation(f *compile.Flow, pe *pq.Error) error {
	switch pe.Code {
	case "23505":
		for _, ix := range f.Indexes() {
			if ix.Name != pe.Constraint {
				continue
			}
			key := "unique index " + ix.Name
			if ix.Primary {
				key = "primary key " + ix.Name
			}
			return &KeyViolation{Flow: f.Name(), PG: pe, msg: fmt.Sprintf(
				"%s: flow %s: the query yields rows that break the %s (%s): %s; %s: the query must yield one row per key within the window, and none with the key of a row outside it, which the refresh keeps (a key without the window's columns allows that: RW406)",
				ix.Pos, f.Name(), key, strings.Join(ix.Columns, ", "), diag.Visible(strings.TrimSuffix(pe.Detail, ".")), unchanged)}
		}
	case "23502":
		for _, ix := range f.Indexes() {
			if ix.Primary && pe.Table == f.Table.Name && slices.Contains(ix.Columns, pe.Column) {
				return &KeyViolation{Flow: f.Name(), PG: pe, msg: fmt.Sprintf(
					"%s: flow %s: the query yields a NULL in column %s, which is in the primary key %s (%s); %s: a primary key's columns are NOT NULL",
					ix.Pos, f.Name(), pe.Column, ix.Name, strings.Join(ix.Columns, ", "), unchanged)}
			}
		}
	}
	return nil
}

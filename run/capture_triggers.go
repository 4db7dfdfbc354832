package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
)

// A flow that captures by triggers (spec capture: triggers) skips its
// probes when its triggers vouch that nothing changed: every table it
// reads and its target carry rwc's trigger, intact and unaltered since
// the last refresh stored the flow's fingerprints, and rwc.change_log
// holds no transaction on any of them that the stored snapshot did not
// see (on the target, none but that refresh's own). The fingerprints
// stored then are still the tables' fingerprints now, so the decision is
// the one the probes would have led to. Anything the triggers cannot
// vouch for is probed as with capture: fingerprints, so that a trigger
// can only ever save a probe, never hide a change.

// TableCapture is what a refresh reads of one table's trigger and log.
type TableCapture struct {
	Relation string `json:"relation"`
	relid    uint32
	token    string // the table's, trigger's and function's catalog row versions
	// Loggable: a plain table whose trigger is intact, whose token a
	// refresh can store.
	Loggable bool `json:"loggable"`
	// Trusted: its token is the one stored with the fingerprints, so its
	// trigger logged every change since.
	Trusted bool `json:"trusted"`
	Changed bool `json:"changed"`
	// Why is what keeps it from vouching ("": it vouches).
	Why string `json:"why,omitempty"`
	// missing: it does not exist (yet); installable: a plain table whose
	// triggers are missing or not as rwc made them, which rwc can mend.
	missing, installable bool
}

type epochs []TableCapture

// epochSQL reads, for each table ($2), in the refresh's snapshot: whether
// it exists, is a plain, logged table without children and no one's child
// (a write through a parent fires none of its statement triggers; crash
// recovery empties an unlogged table, firing none), has rwc's triggers as
// rwc made them, its token, the token stored for the flow ($1), and
// whether the log holds a transaction the stored snapshot did not see.
// The token holds the columns' catalog rows too: ALTER TABLE … INHERIT and
// NO INHERIT change them, and leave the table's own alone.
const epochSQL = `SELECT r.name, coalesce(c.oid, 0), coalesce(c.relkind::text, ''), coalesce(c.relpersistence::text, ''),
	coalesce(c.relhassubclass, false), coalesce(EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid), false),
	t.oid IS NOT NULL, coalesce(t.tgenabled = 'A' AND t.tgtype = $3 AND t.tgqual IS NULL AND cardinality(t.tgattr::int2[]) = 0
		AND p.proname = 'capture' AND p.pronamespace = 'rwc'::regnamespace AND p.prosecdef AND p.prosrc = $4
		AND p.proconfig = ARRAY[$6]::text[], false),
	rt.oid IS NOT NULL, coalesce(rt.tgenabled = 'R' AND rt.tgtype = $5 AND rt.tgqual IS NULL AND cardinality(rt.tgattr::int2[]) = 0
		AND rt.tgfoid = t.tgfoid, false),
	concat_ws('/', c.xmin, t.xmin, p.xmin, rt.xmin, (SELECT string_agg(a.xmin::text, ',' ORDER BY a.attnum) FROM pg_attribute a
		WHERE a.attrelid = c.oid AND a.attnum > 0)), coalesce(s.token, ''),
	coalesce(EXISTS (SELECT 1 FROM rwc.change_log l WHERE l.relid = c.oid
		AND NOT pg_visible_in_snapshot(l.xid, s.snapshot) AND l.xid IS DISTINCT FROM s.writer), false)
	FROM unnest($2::text[]) WITH ORDINALITY AS r(name, n)
	LEFT JOIN pg_class c ON c.oid = to_regclass(r.name)
	LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = '` + compile.CaptureTrigger + `'
	LEFT JOIN pg_proc p ON p.oid = t.tgfoid
	LEFT JOIN pg_trigger rt ON rt.tgrelid = c.oid AND rt.tgname = '` + compile.CaptureReplicaTrigger + `'
	LEFT JOIN rwc.captures s ON s.flow = $1 AND s.relid = c.oid
	ORDER BY r.n`

// relation is what epochSQL reads of a table's catalog rows.
type relation struct {
	relid             uint32
	kind, persistence string
	children, child   bool // it has inheritance children; it is a partition or a child
	hasTrigger        bool
	intact            bool // its trigger is as rwc made it
	hasReplica        bool
	replicaIntact     bool // its replica trigger is as rwc made it
}

// readEpochs reads f's tables' epochs in tx (one round trip).
func readEpochs(ctx context.Context, tx *sql.Tx, f *compile.Flow) (epochs, error) {
	rows, err := tx.QueryContext(ctx, epochSQL, f.Name(), pq.Array(f.CaptureTables()), compile.CaptureTriggerType, compile.CaptureFunctionBody,
		compile.CaptureReplicaTriggerType, compile.CaptureFunctionConfig)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out epochs
	for rows.Next() {
		var e TableCapture
		var r relation
		var stored string
		if err := rows.Scan(&e.Relation, &r.relid, &r.kind, &r.persistence, &r.children, &r.child, &r.hasTrigger, &r.intact,
			&r.hasReplica, &r.replicaIntact, &e.token, &stored, &e.Changed); err != nil {
			return nil, err
		}
		e.relid = r.relid
		e.Why = blindSpot(r)
		// rwc can give it its triggers: it exists, and only they are amiss
		// (or it is the target that the refresh reading this creates).
		e.missing = r.relid == 0
		e.installable = e.Why != "" && r.relid != 0 && r.plain()
		e.Loggable = e.Why == ""
		switch {
		case e.Why != "":
		case stored == "":
			e.Why = "not vouched for yet: its trigger is newer than the fingerprints"
		case stored != e.token:
			e.Why = "its trigger, or the table's definition, changed since the last refresh"
		}
		e.Trusted = e.Why == ""
		out = append(out, e)
	}
	return out, rows.Err()
}

// blindSpot says why a table's trigger cannot log its changes ("": it can).
func blindSpot(r relation) string {
	switch {
	case r.relid == 0:
		return "does not exist yet"
	case !r.plain():
		return notPlain(r)
	case !r.hasTrigger:
		return "has no " + compile.CaptureTrigger + " trigger"
	case !r.intact:
		return "its " + compile.CaptureTrigger + " trigger is disabled, or not as rwc made it"
	case !r.hasReplica:
		return "has no " + compile.CaptureReplicaTrigger + " trigger (for logical replication's writes)"
	case !r.replicaIntact:
		return "its " + compile.CaptureReplicaTrigger + " trigger is disabled, or not as rwc made it"
	}
	return ""
}

// plain reports whether r is a table whose own triggers see every write
// to it: a logged table, no one's parent or child.
func (r relation) plain() bool {
	return r.kind == "r" && !r.children && !r.child && r.persistence == "p"
}

// notPlain says why a table that exists is not plain.
func notPlain(r relation) string {
	switch {
	case r.kind == "v":
		return "is a view: a trigger cannot log what changes under it"
	case r.kind == "m":
		return "is a materialized view: REFRESH MATERIALIZED VIEW fires no trigger"
	case r.kind == "f":
		return "is a foreign table: its rows change on another server"
	case r.kind == "p":
		return "is partitioned: writes to a partition do not fire its trigger"
	case r.kind != "r":
		return "is not a table"
	case r.children:
		return "has inheritance children, whose writes its trigger does not see"
	case r.child:
		return "is a partition or an inheritance child: writes through its parent do not fire its trigger"
	}
	return "is unlogged: crash recovery empties it, firing no trigger"
}

// unchanged reports whether every table vouches that nothing changed.
func (es epochs) unchanged() bool {
	for _, e := range es {
		if !e.Trusted || e.Changed {
			return false
		}
	}
	return len(es) > 0
}

// lacksTriggers reports whether a table could have rwc's trigger and has
// none, or a broken one (the target, created by the refresh that read
// this, has none yet).
func (es epochs) lacksTriggers() bool {
	for _, e := range es {
		if e.missing || e.installable {
			return true
		}
	}
	return false
}

// summary is what the capture found, for the event and the log.
func (es epochs) summary(skipped bool) string {
	if skipped {
		return "triggers: nothing changed since the last refresh, no probe"
	}
	var parts []string
	for _, e := range es {
		switch {
		case e.Why != "":
			parts = append(parts, e.Relation+" "+e.Why)
		case e.Changed:
			parts = append(parts, e.Relation+" changed")
		}
	}
	return "triggers: probed (" + strings.Join(parts, "; ") + ")"
}

// storeEpochs records, with the fingerprints this refresh stored (or
// kept, having found nothing changed), what its tables' triggers vouch
// from now on: each loggable table's token, the refresh's snapshot, and
// for the target the refresh's own transaction, whose writes are rwc's.
func storeEpochs(ctx context.Context, tx *sql.Tx, f *compile.Flow, es epochs) error {
	var relids []int64
	var names, tokens []string
	seen := map[uint32]bool{}
	for _, e := range es {
		// One table the query names twice ("ev" and "public"."ev") is
		// one row: a second would update the first in the same statement.
		if e.Loggable && !seen[e.relid] {
			seen[e.relid] = true
			relids, names, tokens = append(relids, int64(e.relid)), append(names, e.Relation), append(tokens, e.token)
		}
	}
	// The DELETE and the INSERT of one statement see the same rows: the
	// rows kept are updated in place.
	_, err := tx.ExecContext(ctx, `WITH gone AS (DELETE FROM rwc.captures WHERE flow = $1 AND NOT (relid = ANY($2::oid[])))
		INSERT INTO rwc.captures (flow, relid, relation, token, snapshot, writer)
		SELECT $1, r.relid, r.relation, r.token, pg_current_snapshot(), CASE WHEN r.relation = $5 THEN pg_current_xact_id() END
		FROM unnest($2::oid[], $3::text[], $4::text[]) AS r(relid, relation, token)
		ON CONFLICT (flow, relid) DO UPDATE SET relation = EXCLUDED.relation, token = EXCLUDED.token,
			snapshot = EXCLUDED.snapshot, writer = EXCLUDED.writer`,
		f.Name(), pq.Array(relids), pq.Array(names), pq.Array(tokens), f.Target())
	return err
}

// captureLock is the advisory lock (shared by refreshes of flows that
// capture by triggers, from before their snapshot until they commit) that
// collectChangeLog takes exclusively: a refresh running meanwhile may
// store a snapshot that has not seen a logged change yet.
const captureLock = "rwc.change_log"

// holdCapture takes the shared lock on conn, before the refresh's
// transaction begins; the returned function releases it.
func holdCapture(ctx context.Context, conn *sql.Conn) (func(), error) {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock_shared(hashtextextended($1, 0))`, captureLock); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.ExecContext(ctx, `SELECT pg_advisory_unlock_shared(hashtextextended($1, 0))`, captureLock)
	}, nil
}

// collectChangeLog deletes what no flow needs of f's tables' log: the
// transactions every stored snapshot saw. It gives up when a refresh that
// captures by triggers is running (captureLock), or a row is locked.
func collectChangeLog(ctx context.Context, db *sql.DB, f *compile.Flow) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var got bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, captureLock).Scan(&got); err != nil || !got {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM rwc.change_log WHERE ctid = ANY(ARRAY(
		SELECT l.ctid FROM rwc.change_log l WHERE l.relid = ANY(ARRAY(SELECT to_regclass(x)::oid FROM unnest($1::text[]) x))
		AND NOT EXISTS (SELECT 1 FROM rwc.captures s WHERE s.relid = l.relid AND NOT pg_visible_in_snapshot(l.xid, s.snapshot))
		FOR UPDATE SKIP LOCKED))`, pq.Array(f.CaptureTables())); err != nil {
		return err
	}
	return tx.Commit()
}

// installCaptureTriggers gives each of f's tables that lacks it rwc's
// trigger (and rwc.capture() when it is missing or not rwc's), each table
// in a transaction of its own. A table that cannot have one (a view), or
// that the role may not give one, keeps being probed: what could not be
// done is returned, to be said, not failed on.
func installCaptureTriggers(ctx context.Context, db *sql.DB, f *compile.Flow, lockTimeout time.Duration) []string {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return []string{err.Error()}
	}
	es, err := readEpochs(ctx, tx, f)
	tx.Rollback()
	if err != nil {
		return []string{err.Error()}
	}
	var notes []string
	for _, e := range es {
		if !e.installable {
			continue
		}
		if err := installTrigger(ctx, db, e.Relation, lockTimeout); err != nil {
			notes = append(notes, fmt.Sprintf("%s: no %s trigger on %s (%s): it is probed at every refresh; give rwc's role ownership of the table, or create the trigger as its owner (rwc plan shows the statements)",
				f.Name(), compile.CaptureTrigger, e.Relation, serverWords(err)))
		}
	}
	return notes
}

func installTrigger(ctx context.Context, db *sql.DB, table string, lockTimeout time.Duration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", lockTimeout.Milliseconds())); err != nil {
		return err
	}
	// Replaced only when it is not rwc's: replacing it alters its catalog
	// row, which every table's token holds (one more probe each).
	var ours bool
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT prosrc = $1 AND prosecdef AND proconfig = ARRAY[$2]::text[]
		FROM pg_proc WHERE oid = to_regprocedure('rwc.capture()')), false)`, compile.CaptureFunctionBody, compile.CaptureFunctionConfig).Scan(&ours); err != nil {
		return err
	}
	stmts := compile.CaptureTriggerSQL(table)
	if !ours {
		stmts = append([]string{compile.CaptureFunctionSQL}, stmts...)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
	// LogsValues: its triggers log the values of the column the flow's
	// probe of it groups by, so a refresh probes only those that changed.
	LogsValues bool `json:"logs_values"`
	// values: the values logged since the last refresh, when they are all
	// that changed (valuesKnown).
	values      []string
	valuesKnown bool
	// logs: the attnums its triggers log; want: the one the flow needs
	// logged (0: none).
	logs []int
	want int
	// missing: it does not exist (yet); installable: a plain table whose
	// triggers are missing, not as rwc made them, or do not log the column
	// the flow needs, which rwc can mend.
	missing, installable bool
}

type epochs []TableCapture

// epochSQL reads, for each table ($2), in the refresh's snapshot: whether
// it exists, is a plain, logged table without children and no one's child
// (a write through a parent fires none of its statement triggers; crash
// recovery empties an unlogged table, firing none), or a partitioned
// table whose partitions are all such tables (parts: how many are not,
// and the distinct sets of rwc's triggers they carry, as partitionSig
// renders them), rwc's triggers on it and whether their functions are
// rwc's as rwc made them, its token (tokenSQL), the token stored for the
// flow ($1), the column whose values the flow needs logged ($3, "" none)
// and whether its type prints the same in every session, and what the
// log holds that the stored snapshot did not see: a transaction that
// changed anything (change_log, or a NULL, logged with attnum 0 in
// change_values), and the values of that column that changed
// (change_values).
var epochSQL = `SELECT r.name, coalesce(c.oid, 0), coalesce(c.relkind::text, ''), coalesce(c.relpersistence::text, ''),
	coalesce(c.relhassubclass, false), coalesce(EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid), false),
	coalesce(trg.defs, '[]'), coalesce(parts.odd, 0), coalesce(parts.sigs, '{}'),
	` + tokenSQL + `, coalesce(s.token, ''),
	coalesce(w.attnum, 0), coalesce(w.atttypid IN ('date'::regtype, 'int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'text'::regtype, 'varchar'::regtype), false),
	coalesce(EXISTS (SELECT 1 FROM rwc.change_log l WHERE l.relid = c.oid
		AND NOT pg_visible_in_snapshot(l.xid, s.snapshot) AND l.xid IS DISTINCT FROM s.writer)
		OR EXISTS (SELECT 1 FROM rwc.change_values l WHERE l.relid = c.oid AND l.attnum = 0
		AND NOT pg_visible_in_snapshot(l.xid, s.snapshot) AND l.xid IS DISTINCT FROM s.writer), false),
	coalesce(EXISTS (SELECT 1 FROM rwc.change_values l WHERE l.relid = c.oid
		AND NOT pg_visible_in_snapshot(l.xid, s.snapshot) AND l.xid IS DISTINCT FROM s.writer), false),
	ARRAY(SELECT DISTINCT l.value FROM rwc.change_values l WHERE l.relid = c.oid AND l.attnum = w.attnum
		AND NOT pg_visible_in_snapshot(l.xid, s.snapshot) AND l.xid IS DISTINCT FROM s.writer ORDER BY 1)
	FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS r(name, col, n)
	LEFT JOIN pg_class c ON c.oid = to_regclass(r.name)
	LEFT JOIN pg_attribute w ON w.attrelid = c.oid AND w.attname = r.col AND w.attnum > 0 AND NOT w.attisdropped
	LEFT JOIN LATERAL (SELECT json_agg(json_build_object('name', t.tgname, 'type', t.tgtype, 'enabled', t.tgenabled,
			'plain', t.tgqual IS NULL AND cardinality(t.tgattr::int2[]) = 0, 'old', coalesce(t.tgoldtable, ''), 'new', coalesce(t.tgnewtable, ''),
			'args', array_remove(string_to_array(encode(t.tgargs, 'escape'), '\000'), ''),
			'function', CASE WHEN p.pronamespace = 'rwc'::regnamespace AND p.proname IN ('capture', 'capture_values') THEN p.proname::text ELSE '' END,
			'current', coalesce(p.prosecdef AND (p.proname = 'capture' AND p.prosrc = $4 AND p.proconfig = $6::text[]
				OR p.proname = 'capture_values' AND p.prosrc = $5 AND p.proconfig = $7::text[]), false)) ORDER BY t.tgname) AS defs
		FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = c.oid AND t.tgname = ANY(` + captureNames + `)) trg ON true
	` + partsSQL(`(r.name IS DISTINCT FROM $8 OR $9::text[] IS NULL OR p.relname = ANY($9::text[]))`) + `
	LEFT JOIN rwc.captures s ON s.flow = $1 AND s.relid = c.oid
	ORDER BY r.n`

// captureNames is the names of rwc's triggers, as an SQL array (they are
// rwc's constants, not input).
var captureNames = func() string {
	var names []string
	for _, d := range compile.CaptureTriggers(true) {
		names = append(names, d.Name)
	}
	return "'{" + strings.Join(names, ",") + "}'::name[]"
}()

// tokenSQL is a table's token (c: its pg_class row; parts: partsSQL's):
// the catalog row versions of the table, its columns (ALTER TABLE …
// INHERIT and NO INHERIT change them, and leave the table's own alone),
// rwc's triggers on it and their functions, and for a partitioned table
// those of each partition and of its triggers: any DDL by anyone changes
// it. A refresh stores it as its own writes left it (storeEpochs): the
// partitions it swapped in are its own.
var tokenSQL = `concat_ws('/', c.xmin,
	(SELECT string_agg(t.xmin || ':' || p.xmin, ',' ORDER BY t.tgname) FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE t.tgrelid = c.oid AND t.tgname = ANY(` + captureNames + `)),
	(SELECT string_agg(a.xmin::text, ',' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0),
	parts.token)`

// partsSQL reads, of a partitioned table c's partitions (those for which
// counts holds: of a target, those its window can hold rows of, see
// compile.Flow.WindowPartitions), in one pass over the catalog: how many
// are not plain, logged tables (odd); the distinct sets of rwc's triggers
// they carry (sigs: each trigger's name, tgtype, tgenabled, whether it is
// plain, and whether its function is rwc.capture() as rwc made it; see
// partitionSigs); and their part of the token.
func partsSQL(counts string) string {
	return `LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE NOT q.plain) AS odd, array_agg(DISTINCT q.sig) AS sigs,
			string_agg(q.tok, ',' ORDER BY q.oid) AS token
		FROM (SELECT p.oid, p.relkind = 'r' AND p.relpersistence = 'p' AND NOT p.relhassubclass AS plain,
				coalesce(string_agg(concat_ws(':', t.tgname, t.tgtype, t.tgenabled, t.tgqual IS NULL AND cardinality(t.tgattr::int2[]) = 0,
					f.pronamespace = 'rwc'::regnamespace AND f.prosecdef AND f.proname = 'capture' AND f.prosrc = ` + pq.QuoteLiteral(compile.CaptureFunctionBody) + `
					AND f.proconfig = ARRAY[` + pq.QuoteLiteral(compile.CaptureFunctionConfig) + `]), ',' ORDER BY t.tgname), '') AS sig,
				p.oid || ':' || p.xmin || ':' || coalesce(string_agg(t.xmin || ':' || f.xmin, ',' ORDER BY t.tgname), '') AS tok
			FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
			LEFT JOIN pg_trigger t ON t.tgrelid = p.oid AND t.tgname = ANY(` + captureNames + `)
			LEFT JOIN pg_proc f ON f.oid = t.tgfoid
			WHERE i.inhparent = c.oid AND c.relkind = 'p' AND ` + counts + `
			GROUP BY p.oid) q) parts ON true`
}

// relation is what epochSQL reads of a table's catalog rows.
type relation struct {
	relid             uint32
	kind, persistence string
	children, child   bool // it has inheritance children; it is a partition or a child
	triggers          []foundTrigger
	want              int  // the attnum of the column whose values the flow needs logged (0: none)
	wantPrintable     bool // its type prints the same in every session
	// Of a partitioned table's partitions: how many are not plain, logged
	// tables; the distinct sets of rwc's triggers they carry (partitionSig).
	oddParts int
	partSigs []string
}

// foundTrigger is one of rwc's triggers on a table, as pg_trigger has it.
type foundTrigger struct {
	Name     string   `json:"name"`
	Type     int      `json:"type"`
	Enabled  string   `json:"enabled"`
	Plain    bool     `json:"plain"` // no WHEN, no column list
	Old      string   `json:"old"`
	New      string   `json:"new"`
	Args     []string `json:"args"`
	Function string   `json:"function"` // rwc's function it runs ("": another)
	Current  bool     `json:"current"`  // that function is as this rwc makes it
}

// readEpochs reads f's tables' epochs in tx (one round trip), of its
// target's partitions those named in parts (nil: all).
func readEpochs(ctx context.Context, tx *sql.Tx, f *compile.Flow, parts []string) (epochs, error) {
	tables, cols := f.CaptureTables(), f.CaptureColumns()
	want := make([]string, len(tables))
	for i, t := range tables {
		want[i] = cols[t]
	}
	rows, err := tx.QueryContext(ctx, epochSQL, f.Name(), pq.Array(tables), pq.Array(want), compile.CaptureFunctionBody,
		compile.CaptureValuesFunctionBody, pq.Array([]string{compile.CaptureFunctionConfig}), pq.Array(compile.CaptureValuesFunctionConfig), f.Target(), pq.Array(parts))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out epochs
	for rows.Next() {
		var e TableCapture
		var r relation
		var stored, defs string
		var whole, logged bool
		if err := rows.Scan(&e.Relation, &r.relid, &r.kind, &r.persistence, &r.children, &r.child, &defs,
			&r.oddParts, pq.Array(&r.partSigs), &e.token, &stored, &r.want, &r.wantPrintable, &whole, &logged, pq.Array(&e.values)); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(defs), &r.triggers); err != nil {
			return nil, err
		}
		e.read(r, stored, whole, logged)
		out = append(out, e)
	}
	return out, rows.Err()
}

// read fills e from what epochSQL read: r, the token stored, and whether
// the log holds a change the stored snapshot did not see (whole: anything
// may have changed; logged: values were logged).
func (e *TableCapture) read(r relation, stored string, whole, logged bool) {
	e.relid = r.relid
	e.Why = blindSpot(r)
	e.logs = r.logged()
	// rwc can give it its triggers: it exists, and only they are amiss or
	// do not log the column this flow needs (or it is the target that the
	// refresh reading this creates).
	e.missing = r.relid == 0
	if r.want != 0 && r.wantPrintable && r.kind == "r" {
		e.want = r.want
	}
	e.installable = r.relid != 0 && r.capturable() && r.oddParts == 0 && (e.Why != "" || e.want != 0 && !slices.Contains(e.logs, r.want))
	e.Loggable = e.Why == ""
	switch {
	case e.Why != "":
	case stored == "":
		e.Why = "not vouched for yet: its trigger is newer than the fingerprints"
	case stored != e.token:
		e.Why = "its trigger, or the table's definition, changed since the last refresh"
	}
	e.Trusted = e.Why == ""
	e.Changed = whole || logged
	e.LogsValues = e.Loggable && e.want != 0 && slices.Contains(e.logs, e.want)
	// The values logged say all that changed only when nothing was logged
	// whole (a TRUNCATE, a NULL, a replica's write).
	e.valuesKnown = e.Trusted && e.LogsValues && !whole
	if !e.valuesKnown {
		e.values = nil
	}
}

// logged is the attnums r's value triggers log (nil: none, or they
// disagree, which blindSpot reports).
func (r relation) logged() []int {
	var out []int
	for _, t := range r.triggers {
		if t.Function != "capture_values" {
			continue
		}
		var got []int
		for _, a := range t.Args {
			n, err := strconv.Atoi(a)
			if err != nil {
				return nil
			}
			got = append(got, n)
		}
		if out != nil && !slices.Equal(out, got) {
			return nil
		}
		out = got
	}
	return out
}

// outdated is the rwc function that one of r's triggers runs not as this
// rwc makes it ("": none): after an upgrade of rwc, the earlier version's.
func (r relation) outdated() string {
	for _, t := range r.triggers {
		if t.Function != "" && !t.Current {
			return t.Function
		}
	}
	return ""
}

// amiss says which of rwc's triggers r lacks or has not as rwc makes them
// ("": none), and whether it lacks it.
func (r relation) amiss() (name string, lacks bool) {
	want := compile.CaptureTriggers(r.logged() != nil)
	for _, d := range want {
		i := slices.IndexFunc(r.triggers, func(t foundTrigger) bool { return t.Name == d.Name })
		if i < 0 {
			return d.Name, true
		}
		t := r.triggers[i]
		if t.Type != d.Type || t.Enabled != d.Enabled || !t.Plain || t.Old != d.Old || t.New != d.New ||
			t.Function != d.Function || d.Values != (len(t.Args) > 0) {
			return d.Name, false
		}
	}
	if len(r.triggers) != len(want) {
		// A value trigger on a table whose others log no value.
		for _, t := range r.triggers {
			if !slices.ContainsFunc(want, func(d compile.CaptureTriggerDef) bool { return d.Name == t.Name }) {
				return t.Name, false
			}
		}
	}
	return "", false
}

// blindSpot says why a table's triggers cannot log its changes ("": they can).
func blindSpot(r relation) string {
	switch {
	case r.relid == 0:
		return "does not exist yet"
	case !r.capturable():
		return notPlain(r)
	case r.oddParts > 0:
		return "is partitioned, and a partition is not a plain, logged table (a foreign table, an unlogged one, or partitioned itself), whose writes a trigger cannot log"
	}
	if fn := r.outdated(); fn != "" {
		return "runs rwc." + fn + "() not as this version of rwc makes it (an earlier version's, or changed since)"
	}
	name, lacks := r.amiss()
	switch {
	case name == "" && r.kind == "p" && !slices.Equal(r.partSigs, partitionSigs()) && len(r.partSigs) > 0:
		return "is partitioned, and a partition lacks rwc's triggers, or has them not as rwc made them"
	case name == "":
		return ""
	case lacks && name == compile.CaptureReplicaTrigger:
		return "has no " + name + " trigger (for logical replication's writes)"
	case lacks:
		return "has no " + name + " trigger"
	}
	return "its " + name + " trigger is disabled, or not as rwc made it"
}

// plain reports whether r is a table whose own triggers see every write
// to it: a logged table, no one's parent or child.
func (r relation) plain() bool {
	return r.kind == "r" && !r.children && !r.child && r.persistence == "p"
}

// capturable reports whether rwc's triggers can see every write to r: it
// is plain, or a partitioned table that is no one's partition, whose own
// triggers see the writes through it and its partitions' the writes
// straight to them (when they are plain: oddParts).
func (r relation) capturable() bool {
	return r.plain() || r.kind == "p" && !r.child && r.persistence == "p"
}

// partitionSigs is the set of rwc's triggers a partition of a table that
// captures by triggers carries, as epochSQL renders them (name, tgtype,
// tgenabled, plain, rwc's function), in tgname order: its own statement
// trigger (compile.CapturePartitionTriggerSQL) and the clone of its
// parent's replica trigger.
func partitionSigs() []string {
	defs := compile.CaptureTriggers(false)
	sigs := make([]string, len(defs))
	for i, d := range defs {
		sigs[i] = fmt.Sprintf("%s:%d:%s:t:t", d.Name, d.Type, d.Enabled)
	}
	slices.Sort(sigs)
	return []string{strings.Join(sigs, ",")}
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
	case r.child:
		return "is a partition or an inheritance child: writes through its parent do not fire its trigger"
	case r.kind != "r" && r.kind != "p":
		return "is not a table"
	case r.children:
		return "has inheritance children, whose writes its trigger does not see"
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

// summary is what the capture found, for the event and the log: for each
// table, how its fingerprints were taken (how, see capture.noteHow).
func (es epochs) summary(skipped bool, how map[string]string) string {
	if skipped {
		return "triggers: nothing changed since the last refresh, no probe"
	}
	var parts []string
	for _, e := range es {
		switch {
		case e.Why != "":
			parts = append(parts, e.Relation+" "+e.Why)
		case how[e.Relation] == "vouched":
			parts = append(parts, e.Relation+" unchanged, not probed")
		case strings.HasPrefix(how[e.Relation], "vouched, "):
			parts = append(parts, e.Relation+" unchanged "+strings.TrimPrefix(how[e.Relation], "vouched, "))
		case how[e.Relation] != "":
			parts = append(parts, e.Relation+" changed: "+how[e.Relation])
		case e.Changed:
			parts = append(parts, e.Relation+" changed")
		}
	}
	return "triggers: probed (" + strings.Join(parts, "; ") + ")"
}

// storeEpochs records, with the fingerprints this refresh stored (or
// kept, having found nothing changed), what its tables' triggers vouch
// from now on: each loggable table's token as the refresh leaves it (its
// own DDL, the partitions it swapped, is rwc's; the others' catalog rows
// are as its snapshot read them), the refresh's snapshot, and for the
// target the refresh's own transaction, whose writes are rwc's.
func storeEpochs(ctx context.Context, tx *sql.Tx, f *compile.Flow, es epochs, parts []string) error {
	var relids []int64
	var names []string
	seen := map[uint32]bool{}
	for _, e := range es {
		// One table the query names twice ("ev" and "public"."ev") is
		// one row: a second would update the first in the same statement.
		if e.Loggable && !seen[e.relid] {
			seen[e.relid] = true
			relids, names = append(relids, int64(e.relid)), append(names, e.Relation)
		}
	}
	// The DELETE and the INSERT of one statement see the same rows: the
	// rows kept are updated in place.
	_, err := tx.ExecContext(ctx, `WITH gone AS (DELETE FROM rwc.captures WHERE flow = $1 AND NOT (relid = ANY($2::oid[])))
		INSERT INTO rwc.captures (flow, relid, relation, token, snapshot, writer)
		SELECT $1, c.oid, r.relation, `+tokenSQL+`, pg_current_snapshot(), CASE WHEN r.relation = $4 THEN pg_current_xact_id() END
		FROM unnest($2::oid[], $3::text[]) AS r(relid, relation) JOIN pg_class c ON c.oid = r.relid
		`+partsSQL(`(r.relation IS DISTINCT FROM $4 OR $5::text[] IS NULL OR p.relname = ANY($5::text[]))`)+`
		ON CONFLICT (flow, relid) DO UPDATE SET relation = EXCLUDED.relation, token = EXCLUDED.token,
			snapshot = EXCLUDED.snapshot, writer = EXCLUDED.writer`,
		f.Name(), pq.Array(relids), pq.Array(names), f.Target(), pq.Array(parts))
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

// collectChangeLog deletes what no flow needs of the log: the transactions
// every stored snapshot of their table saw, and those of tables no flow
// keeps a snapshot of (a flow removed, or switched to fingerprints, whose
// source kept rwc's triggers): any table's, not only f's, so that a log no
// flow reads any more does not grow. It gives up when a refresh that
// captures by triggers is running (captureLock), or a row is locked.
func collectChangeLog(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var got bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, captureLock).Scan(&got); err != nil || !got {
		return err
	}
	for _, log := range []string{"rwc.change_log", "rwc.change_values"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+log+` WHERE ctid = ANY(ARRAY(
			SELECT l.ctid FROM `+log+` l
			WHERE NOT EXISTS (SELECT 1 FROM rwc.captures s WHERE s.relid = l.relid AND NOT pg_visible_in_snapshot(l.xid, s.snapshot))
			FOR UPDATE SKIP LOCKED))`); err != nil {
			return err
		}
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
	es, err := readEpochs(ctx, tx, f, nil)
	tx.Rollback()
	if err != nil {
		return []string{err.Error()}
	}
	// A table the query names twice is one table, whose triggers log
	// what either name needs.
	logged := map[uint32][]int{}
	for _, e := range es {
		logged[e.relid] = union(logged[e.relid], e.toLog())
	}
	var notes []string
	done := map[uint32]bool{}
	for _, e := range es {
		if !e.installable || done[e.relid] {
			continue
		}
		done[e.relid] = true
		if err := installTrigger(ctx, db, e.Relation, logged[e.relid], lockTimeout); err != nil {
			notes = append(notes, fmt.Sprintf("%s: no %s trigger on %s (%s): it is probed at every refresh; give rwc's role ownership of the table, or create the trigger as its owner (rwc plan shows the statements)",
				f.Name(), compile.CaptureTrigger, e.Relation, serverWords(err)))
		}
	}
	return notes
}

func installTrigger(ctx context.Context, db *sql.DB, table string, attnums []int, lockTimeout time.Duration) error {
	tx, err := beginWaiting(ctx, db, lockTimeout)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Replaced only when they are not rwc's: replacing one alters its
	// catalog row, which every table's token holds (one more probe each).
	var ours, oursValues bool
	if err := tx.QueryRowContext(ctx, `SELECT
		coalesce((SELECT prosrc = $1 AND prosecdef AND proconfig = $2::text[] FROM pg_proc WHERE oid = to_regprocedure('rwc.capture()')), false),
		coalesce((SELECT prosrc = $3 AND prosecdef AND proconfig = $4::text[] FROM pg_proc WHERE oid = to_regprocedure('rwc.capture_values()')), false)`,
		compile.CaptureFunctionBody, pq.Array([]string{compile.CaptureFunctionConfig}),
		compile.CaptureValuesFunctionBody, pq.Array(compile.CaptureValuesFunctionConfig)).Scan(&ours, &oursValues); err != nil {
		return err
	}
	var stmts []string
	if !ours {
		stmts = append(stmts, compile.CaptureFunctionSQL)
	}
	if !oursValues && len(attnums) > 0 {
		stmts = append(stmts, compile.CaptureValuesFunctionSQL)
	}
	onTable, err := withPartitions(ctx, tx, table, compile.CaptureTriggerSQL(table, attnums))
	if err != nil {
		return err
	}
	for _, s := range append(stmts, onTable...) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// withPartitions is the statements that give table rwc's triggers
// (compile.CaptureTriggerSQL: drops, then creates), with, when it is
// partitioned, those of its partitions: their own rwc triggers dropped
// after the parent's (whose clones go with them), their statement trigger
// created, in one statement each way (one round trip, however many).
func withPartitions(ctx context.Context, tx *sql.Tx, table string, stmts []string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT format('%I.%I', n.nspname, p.relname) FROM pg_inherits i
		JOIN pg_class p ON p.oid = i.inhrelid JOIN pg_namespace n ON n.oid = p.relnamespace
		WHERE i.inhparent = to_regclass($1) ORDER BY 1`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var drops, creates []string
	for rows.Next() {
		var part string
		if err := rows.Scan(&part); err != nil {
			return nil, err
		}
		for _, d := range compile.CaptureTriggers(true) {
			drops = append(drops, "DROP TRIGGER IF EXISTS "+d.Name+" ON "+part)
		}
		creates = append(creates, compile.CapturePartitionTriggerSQL(part)...)
	}
	if err := rows.Err(); err != nil || drops == nil {
		return stmts, err
	}
	n := len(compile.CaptureTriggers(true))
	out := append(slices.Clone(stmts[:n]), strings.Join(drops, "; "))
	return append(append(out, stmts[n:]...), strings.Join(creates, "; ")), nil
}

// toLog is the attnums e's triggers are to log: those they log, and the
// one the flow needs.
func (e TableCapture) toLog() []int {
	if e.want == 0 {
		return union(e.logs, nil)
	}
	return union(e.logs, []int{e.want})
}

// union is the sorted union of two sets of attnums.
func union(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// of is the capture of table (quoted, as CaptureTables names it).
func (es epochs) of(table string) (TableCapture, bool) {
	for _, e := range es {
		if e.Relation == table {
			return e, true
		}
	}
	return TableCapture{}, false
}

package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run/session"
)

// LockTimeoutError is a lock wait rwc gave up on (SQLSTATE 55P03): what was
// locked, by whom, and what to do, in place of the server's "canceling
// statement due to lock timeout", which names neither.
type LockTimeoutError struct {
	msg string
	PG  *pq.Error
}

func (e *LockTimeoutError) Error() string { return e.msg }
func (e *LockTimeoutError) Unwrap() error { return e.PG }

// lockedRel is a relation a statement may have waited for, as rwc names it
// to the user (role "target", "source" or "state table", and the name).
type lockedRel struct {
	role, name string
	sql        string // the name to look up, as SQL (quoted)
	// weak: rwc's weakest lock on it is ACCESS SHARE (a source, read), not
	// ROW EXCLUSIVE (a table it writes).
	weak bool
}

// lockHolder is another session holding a lock on a relation rwc needed.
type lockHolder struct {
	rel     int // index into the relations asked about
	mode    string
	pid     int
	app     string
	state   string
	dur     time.Duration
	backend string
	query   string
	client  string // address:port, "a local socket", or "" (unknown)
	// since: when the session connected, its transaction began and its
	// query (the current or the last one) started, as the server prints
	// them in UTC ("" when not).
	connected, xact, queryStart string
	wait                        string // wait_event_type:wait_event, or ""
}

func (h lockHolder) String() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("pid %d", h.pid))
	if h.backend != "" && h.backend != "client backend" {
		parts = append(parts, h.backend)
	}
	if h.app != "" {
		parts = append(parts, "application_name "+diag.Visible(h.app))
	}
	if h.client != "" {
		parts = append(parts, "client "+h.client)
	}
	if h.connected != "" {
		parts = append(parts, "connected at "+h.connected)
	}
	if h.xact != "" {
		parts = append(parts, "in a transaction since "+h.xact)
	}
	if h.state != "" {
		d := h.dur.Round(time.Second)
		if d < time.Minute {
			d = h.dur.Round(100 * time.Millisecond)
		}
		parts = append(parts, fmt.Sprintf("%s for %s", h.state, d))
	}
	if h.queryStart != "" {
		parts = append(parts, "query started at "+h.queryStart)
	}
	if h.wait != "" {
		parts = append(parts, "waiting on "+h.wait)
	}
	parts = append(parts, "holding "+lockMode(h.mode))
	if q := []rune(diag.Visible(strings.Join(strings.Fields(h.query), " "))); len(q) > 0 {
		if len(q) > 120 {
			q = append(q[:117], []rune("...")...)
		}
		parts = append(parts, "query: "+string(q))
	}
	return strings.Join(parts, ", ")
}

// The lock modes that conflict with ACCESS SHARE, and with ROW EXCLUSIVE:
// the least rwc takes on a table it reads, and on one it writes.
var (
	conflictsWithAccessShare  = map[string]bool{"AccessExclusiveLock": true}
	conflictsWithRowExclusive = map[string]bool{"ShareLock": true, "ShareRowExclusiveLock": true, "ExclusiveLock": true, "AccessExclusiveLock": true}
)

// lockHolders asks, on a session of its own, which other sessions hold
// locks on rels now that conflict with rwc's least lock on the relation;
// none, when the wait was for something else (a row lock, or a stronger
// lock rwc wanted: TRUNCATE, ALTER TABLE). The look-up itself takes no
// lock on rels (to_regclass does not lock).
func lockHolders(ctx context.Context, db *sql.DB, rels []lockedRel) ([]lockHolder, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = r.sql
	}
	rows, err := db.QueryContext(ctx, `SELECT w.i - 1, `+holderColumns+`
		FROM unnest($1::text[]) WITH ORDINALITY AS w(name, i)
		JOIN pg_locks l ON l.locktype = 'relation' AND l.granted AND l.relation = to_regclass(w.name)
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.pid <> pg_backend_pid()
		ORDER BY w.i, a.pid`, pq.Array(names))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var conflicting []lockHolder
	for rows.Next() {
		var h lockHolder
		if err := rows.Scan(append([]any{&h.rel}, h.fields()...)...); err != nil {
			return nil, err
		}
		conflicts := conflictsWithRowExclusive
		if rels[h.rel].weak {
			conflicts = conflictsWithAccessShare
		}
		if conflicts[h.mode] {
			conflicting = append(conflicting, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Only a holder whose lock conflicts with rwc's is named: telling the
	// user to end a session that blocks nothing would be worse than
	// saying nothing (a row lock, say, shows in pg_locks as a transaction).
	return conflicting, nil
}

// lockTimeout turns a lock timeout (any other error is returned as it is)
// into a LockTimeoutError that names what subject (e.g. "flow x") waited
// for among rels, and the sessions holding it, and says what to do. after
// is what became of the work ("the refresh was rolled back").
func lockTimeout(ctx context.Context, db *sql.DB, subject string, rels []lockedRel, timeout time.Duration, after string, err error) error {
	var pe *pq.Error
	if !isLockTimeout(err) || !errors.As(err, &pe) {
		return err
	}
	var lte *LockTimeoutError
	if errors.As(err, &lte) {
		return err
	}
	prefix := ""
	if subject != "" {
		prefix = subject + ": "
	}
	waited := "the lock timeout (--lock-timeout)"
	if timeout > 0 {
		waited = fmt.Sprintf("the lock timeout (%s, --lock-timeout)", timeout)
	} else if setting := sessionLockTimeout(ctx, db); setting != "" {
		waited = fmt.Sprintf("the lock timeout (%s, --lock-timeout)", setting)
	}
	holders, lerr := lockHolders(ctx, db, rels)
	if lerr != nil || len(holders) == 0 {
		var names []string
		for _, r := range rels {
			names = append(names, r.role+" "+r.name)
		}
		what := "a table"
		if len(names) > 0 {
			what = "a table (" + strings.Join(names, ", ") + ", or a table one of them reads)"
		}
		return &LockTimeoutError{PG: pe, msg: fmt.Sprintf("%s%s stayed locked by another session: rwc gave up after %s; %s: "+
			"see pg_locks and pg_stat_activity for the session, then try again once it ends, or raise --lock-timeout", prefix, what, waited, after)}
	}
	var locked []string
	var pids []string
	seen := map[int]bool{}
	for i := 0; i < len(holders); {
		j := i
		var hs []string
		for ; j < len(holders) && holders[j].rel == holders[i].rel; j++ {
			hs = append(hs, holders[j].String())
			if !seen[holders[j].pid] {
				seen[holders[j].pid] = true
				pids = append(pids, fmt.Sprint(holders[j].pid))
			}
		}
		r := rels[holders[i].rel]
		by := "another session"
		if len(hs) > 1 {
			by = "other sessions"
		}
		locked = append(locked, fmt.Sprintf("the %s %s is locked by %s (%s)", r.role, r.name, by, strings.Join(hs, "; ")))
		i = j
	}
	end := "it with SELECT pg_terminate_backend(" + pids[0] + ")"
	if len(pids) > 1 {
		end = "them with SELECT pg_terminate_backend(pid) FROM unnest(ARRAY[" + strings.Join(pids, ", ") + "]) pid"
	}
	return &LockTimeoutError{PG: pe, msg: fmt.Sprintf("%s%s: rwc gave up after %s; %s: wait for that session to end, or end %s",
		prefix, strings.Join(locked, "; "), waited, after, end)}
}

// sessionLockTimeout is db's sessions' lock_timeout ("" when none or
// unknown): the bound a caller that was not told it waited under.
func sessionLockTimeout(ctx context.Context, db *sql.DB) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var v string
	if db.QueryRowContext(ctx, `SELECT current_setting('lock_timeout')`).Scan(&v) != nil || v == "0" {
		return ""
	}
	return v
}

// flowRels are the relations a flow's refresh locks: its target, its
// sources as the query names them, and rwc's state tables.
func flowRels(f *compile.Flow) []lockedRel {
	rels := []lockedRel{{role: "target", name: f.Table.Pipeline.Schema + "." + f.Table.Name, sql: f.Target()}}
	seen := map[string]bool{f.Target(): true}
	if f.Query != nil {
		for _, t := range f.Query.Tables {
			name, q := t.Name, pq.QuoteIdentifier(t.Name)
			if t.Schema != "" {
				name, q = t.Schema+"."+t.Name, pq.QuoteIdentifier(t.Schema)+"."+q
			}
			if !seen[q] {
				seen[q] = true
				rels = append(rels, lockedRel{role: "source", name: name, sql: q, weak: true})
			}
		}
	}
	return append(rels, stateRels...)
}

// stateRels are rwc's state tables.
var stateRels = func() []lockedRel {
	var rels []lockedRel
	for _, t := range []string{"schema_version", "flows", "fingerprints", "events", "deployments", "backfills", "backfill_batches"} {
		rels = append(rels, lockedRel{role: "state table", name: "rwc." + t, sql: "rwc." + t})
	}
	return rels
}()

// holderColumns are a lock holder's columns, from pg_locks l and
// pg_stat_activity a, in the order lockHolder.fields scans them. The
// server formats its times (in UTC): its clock, not rwc's, is the one they
// were taken by.
const holderColumns = `l.mode, a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''),
			coalesce(extract(epoch FROM clock_timestamp() - a.state_change), 0)::float8, coalesce(a.backend_type, ''), coalesce(a.query, ''),
			CASE WHEN a.client_port = -1 THEN 'a local socket' WHEN a.client_addr IS NOT NULL THEN host(a.client_addr) || ':' || a.client_port ELSE '' END,
			coalesce(to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'), ''),
			coalesce(to_char(a.xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'), ''),
			coalesce(to_char(a.query_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'), ''),
			coalesce(a.wait_event_type || ':' || a.wait_event, '')`

// fields are the scan targets of holderColumns.
func (h *lockHolder) fields() []any {
	return []any{&h.mode, &h.pid, &h.app, &h.state, durationScanner{&h.dur}, &h.backend, &h.query,
		&h.client, &h.connected, &h.xact, &h.queryStart, &h.wait}
}

// clientNote says what the server knows of whether the holder's client is
// still there: a session whose client went away would hold its locks on
// for as long as nothing tells the server so.
func (h lockHolder) clientNote() string {
	switch {
	case strings.HasPrefix(h.state, "idle"):
		return "its client is still connected, as far as the server knows: an idle session ends as soon as its client's connection closes"
	case h.wait == "Client:ClientWrite":
		return "it is waiting to send to its client, which may be gone (or not reading)"
	case h.state == "active" && strings.HasPrefix(h.app, session.Name+" "):
		return "its client is still connected, as far as the server knows: the server checks an rwc session's client every second while a statement runs (client_connection_check_interval)"
	case h.state == "active":
		return "whether its client is still there cannot be told: a session running a statement notices that its client went away only when it next writes to it, unless it sets client_connection_check_interval"
	}
	return ""
}

// durationScanner scans seconds (float8) into a duration.
type durationScanner struct{ d *time.Duration }

func (s durationScanner) Scan(v any) error {
	secs, ok := v.(float64)
	if !ok {
		return fmt.Errorf("duration: %T", v)
	}
	*s.d = time.Duration(secs * float64(time.Second))
	return nil
}

// advisoryHolder is the session holding advisory lock key (as
// hashtextextended(key, 0)), if any.
func advisoryHolder(ctx context.Context, db *sql.DB, key string) (lockHolder, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var h lockHolder
	err := db.QueryRowContext(ctx, `SELECT `+holderColumns+`
		FROM (SELECT hashtextextended($1, 0) AS k) k
		JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.classid = ((k.k >> 32) & 4294967295)::oid AND l.objid = (k.k & 4294967295)::oid
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.pid <> pg_backend_pid()
		LIMIT 1`, key).Scan(h.fields()...)
	return h, err == nil
}

// flowBusy is the error of a wait for flow's lock that timed out (err, if
// it was not a lock timeout): who holds it, since when and doing what,
// whether its client is still there, and how to end it. after is what
// became of the work ("nothing was changed").
func (r *Runner) flowBusy(ctx context.Context, flow, after string, err error) error {
	if !isLockTimeout(err) {
		return err
	}
	msg := fmt.Sprintf("flow %s is being refreshed by another rwc (or, with maintain: immediate, its sources are being written in an open transaction), and its lock was not free within %s (--lock-timeout); %s",
		flow, r.opts.LockTimeout, after)
	h, ok := advisoryHolder(ctx, r.db, advisoryNamespace+flow)
	if !ok {
		return errors.New(msg) // released meanwhile, or not visible to this role
	}
	msg += ". The session holding the lock: " + h.String()
	if note := h.clientNote(); note != "" {
		msg += "; " + note
	}
	return fmt.Errorf("%s: wait for it, or end it with SELECT pg_terminate_backend(%d)", msg, h.pid)
}

// lockMode is a pg_locks mode as LOCK TABLE spells it: AccessExclusiveLock
// is ACCESS EXCLUSIVE.
func lockMode(mode string) string {
	var b strings.Builder
	for i, c := range strings.TrimSuffix(mode, "Lock") {
		if i > 0 && c >= 'A' && c <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return strings.ToUpper(b.String())
}

// beginWaiting begins a transaction whose waits for table locks end after
// timeout (lock_timeout), for DDL and repairs outside a refresh.
func beginWaiting(ctx context.Context, db *sql.DB, timeout time.Duration) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", timeout.Milliseconds())); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

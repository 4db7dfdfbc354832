package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// installMaintenance makes f's maintenance functions and triggers (see
// compile/immediate.go) those of the window the refresh resolved, in the
// refresh's transaction: the target it wrote and the window its triggers
// keep commit together. A function is replaced only when it is not as
// rwc would make it (replacing one makes every writer's session plan it
// again), after the server planned its statements; the flow's other
// maintenance functions (a source the query no longer reads) are dropped
// with their triggers.
func installMaintenance(ctx context.Context, tx *sql.Tx, f *compile.Flow, window *predicate.Predicate, obs compile.Observation) error {
	stmts, err := f.Statements(window, false, obs)
	if err != nil {
		return err
	}
	ms, err := f.Maintenance(window, stmts, obs.Settings)
	if err != nil {
		return err
	}
	have, err := readMaintenance(ctx, tx, f, ms)
	if err != nil {
		return err
	}
	for i, m := range ms {
		h := have[i]
		if err := h.refusal(f, m); err != nil {
			return err
		}
		triggers := h.triggers == len(compile.MaintainTriggers)
		if h.stamp == m.Stamp && h.body == m.Body && h.private && triggers {
			continue
		}
		if err := checkMaintenance(ctx, tx, f, m); err != nil {
			return err
		}
		// Replacing the function locks nothing the writers hold; making
		// its triggers again would wait for every writer of the source,
		// which may be waiting for this refresh's lock of the flow.
		stmts := m.FunctionSQL
		if !triggers {
			stmts = m.SQL
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("flow %s: installing its maintenance on %s: %s; nothing was changed (rwc must own the flow's sources to put its triggers on them: docs/least-privilege.md; or drop maintain: immediate)",
					f.Name(), m.Source, serverWords(err))
			}
		}
	}
	var keep []string
	for _, m := range ms {
		keep = append(keep, m.Function)
	}
	return dropMaintenance(ctx, tx, []string{compile.MaintainPrefix(f.Name())}, keep)
}

// maintainedSettings reads the refresh session's values of the settings
// the maintenance functions pin.
func maintainedSettings(ctx context.Context, tx *sql.Tx) ([]compile.Setting, error) {
	out := make([]compile.Setting, len(compile.MaintainedSettings))
	var cols []string
	args := make([]any, len(out))
	for i, name := range compile.MaintainedSettings {
		cols = append(cols, "current_setting("+pq.QuoteLiteral(name)+")")
		out[i].Name = name
		args[i] = &out[i].Value
	}
	if err := tx.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", ")).Scan(args...); err != nil {
		return nil, err
	}
	return out, nil
}

// maintained is what the catalog holds of one source's maintenance.
type maintained struct {
	relid                uint32
	kind                 string
	partition, duplicate bool
	children             bool // inheritance children
	body, stamp          string
	private              bool // PUBLIC may not execute the function
	triggers             int  // rwc's, enabled, calling the function
}

// readMaintenance reads, for each of ms, its source and what is installed.
func readMaintenance(ctx context.Context, tx *sql.Tx, f *compile.Flow, ms []compile.Maintenance) ([]maintained, error) {
	var fns, srcs, names []string
	for _, m := range ms {
		fns, srcs = append(fns, m.Function+"()"), append(srcs, m.Source)
	}
	for _, t := range compile.MaintainTriggers {
		names = append(names, compile.MaintainTrigger(f.Name(), t.Suffix))
	}
	rows, err := tx.QueryContext(ctx, `SELECT coalesce(c.oid, 0), coalesce(c.relkind::text, ''), coalesce(c.relispartition, false), EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = c.oid),
		count(*) OVER (PARTITION BY c.oid) > 1, coalesce(p.prosrc, ''), coalesce(obj_description(p.oid, 'pg_proc'), ''),
		coalesce(p.proacl IS NOT NULL AND NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0), false),
		(SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgfoid = p.oid AND t.tgname = ANY($3) AND t.tgenabled = 'O')
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(fn, src, n)
		LEFT JOIN pg_class c ON c.oid = to_regclass(m.src)
		LEFT JOIN pg_proc p ON p.oid = to_regprocedure(m.fn)
		ORDER BY m.n`, pq.Array(fns), pq.Array(srcs), pq.Array(names))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []maintained
	for rows.Next() {
		var h maintained
		if err := rows.Scan(&h.relid, &h.kind, &h.partition, &h.children, &h.duplicate, &h.body, &h.stamp, &h.private, &h.triggers); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// refusal is why a source cannot be maintained by triggers, if it cannot.
func (h maintained) refusal(f *compile.Flow, m compile.Maintenance) error {
	why := ""
	switch {
	case h.relid == 0:
		why = "does not exist"
	case h.kind != "r":
		why = "is not a plain table (a view, a partitioned or foreign table, …): writes to it fire no statement trigger rwc can rely on"
	case h.partition:
		why = "is a partition: a write through its parent fires none of its statement triggers"
	case h.children:
		why = "has inheritance children: the query reads their rows, and a write to a child fires none of the parent's statement triggers"
	case h.duplicate:
		why = "is named twice, under two names: name it one way in the query"
	}
	if why == "" {
		return nil
	}
	return refuse("flow %s has maintain: immediate, but its source %s %s; nothing was changed (drop maintain: immediate, or read plain tables)", f.Name(), m.Source, why)
}

// checkMaintenance has the server plan each statement of m's function,
// with its transition tables stood in for by empty temporary tables like
// the source, so that a statement the server would refuse (a column that
// a qualified name cannot reach once the source is a transition table)
// fails the refresh, not a writer.
func checkMaintenance(ctx context.Context, tx *sql.Tx, f *compile.Flow, m compile.Maintenance) error {
	setup := []string{
		"CREATE TEMPORARY TABLE rwc_new (LIKE " + m.Source + ") ON COMMIT DROP",
		"CREATE TEMPORARY TABLE rwc_old (LIKE " + m.Source + ") ON COMMIT DROP",
	}
	for _, s := range setup {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	for _, s := range m.Checks {
		if _, err := tx.ExecContext(ctx, "EXPLAIN "+s); err != nil {
			return refuse("flow %s has maintain: immediate, but its maintenance of %s does not plan: %s; nothing was changed (drop maintain: immediate, or tell us the query: rwc should not have offered it)",
				f.Name(), m.Source, serverWords(err))
		}
	}
	_, err := tx.ExecContext(ctx, "DROP TABLE pg_temp.rwc_new, pg_temp.rwc_old")
	return err
}

// dropMaintenance drops the maintenance functions in schema rwc whose
// names start with one of prefixes (every one's: "maintain_"), but for
// those keep names, and with them their triggers.
func dropMaintenance(ctx context.Context, tx *sql.Tx, prefixes, keep []string) error {
	drop, err := staleMaintenance(ctx, tx, prefixes, keep)
	for _, fn := range drop {
		if err == nil {
			_, err = tx.ExecContext(ctx, "DROP FUNCTION "+fn+" CASCADE")
		}
	}
	return err
}

// staleMaintenance lists dropMaintenance's functions.
func staleMaintenance(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, prefixes, keep []string) ([]string, error) {
	var like []string
	for _, p := range prefixes {
		like = append(like, strings.ReplaceAll(p, "_", `\_`)+"%")
	}
	rows, err := q.QueryContext(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = to_regnamespace('rwc') AND p.proname LIKE ANY($1)
		AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) k WHERE to_regprocedure(k || '()') = p.oid) ORDER BY 1`, pq.Array(like), pq.Array(keep))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var fn string
		if err := rows.Scan(&fn); err != nil {
			return nil, err
		}
		out = append(out, fn)
	}
	return out, rows.Err()
}

// dropStaleMaintenance drops, before an apply refreshes anything, the
// maintenance of every flow that p does not have with maintain: immediate
// (removed, or switched to apply): its triggers would go on writing a
// target rwc no longer keeps that way. Looking costs one statement; a
// transaction is begun only when there is something to drop.
func (r *Runner) dropStaleMaintenance(ctx context.Context, p *compile.Project) error {
	var keep []string
	for _, f := range p.Flows {
		if f.Immediate() && f.Query != nil {
			for i := range f.Query.Tables {
				keep = append(keep, compile.MaintainFunction(f.Name(), i))
			}
		}
	}
	all := []string{compile.MaintainPrefixAll}
	if stale, err := staleMaintenance(ctx, r.db, all, keep); err != nil || len(stale) == 0 {
		return err
	}
	tx, err := beginWaiting(ctx, r.db, r.opts.LockTimeout)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := dropMaintenance(ctx, tx, all, keep); err != nil {
		return err
	}
	return tx.Commit()
}

// MaintainedSource is, for a flow with maintain: immediate, one source's
// triggers as they stand: rwc status shows them.
type MaintainedSource struct {
	Source   string `json:"source"`
	Function string `json:"function"`
	// Installed: the function is there, made by rwc; Triggers: how many
	// of its four triggers on the source are there, enabled.
	Installed bool `json:"installed"`
	Triggers  int  `json:"triggers"`
}

// MaintenanceHealth reads, read-only, what f's sources carry of its
// maintenance. A source whose triggers are missing or disabled does not
// keep the target until the next refresh installs them again.
func MaintenanceHealth(ctx context.Context, db *sql.DB, f *compile.Flow) ([]MaintainedSource, error) {
	var out []MaintainedSource
	var names []string
	for _, t := range compile.MaintainTriggers {
		names = append(names, compile.MaintainTrigger(f.Name(), t.Suffix))
	}
	for i, t := range f.CaptureSources() {
		m := MaintainedSource{Source: t, Function: compile.MaintainFunction(f.Name(), i)}
		err := db.QueryRowContext(ctx, `SELECT coalesce(obj_description(p.oid, 'pg_proc') LIKE 'rwc maintenance %', false),
			(SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = to_regclass($2) AND g.tgfoid = p.oid AND g.tgname = ANY($3) AND g.tgenabled = 'O')
			FROM (SELECT to_regprocedure($1) AS oid) p`, m.Function+"()", t, pq.Array(names)).Scan(&m.Installed, &m.Triggers)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

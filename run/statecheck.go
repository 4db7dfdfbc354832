package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/spec"
)

// targetEvidence is the copy of a flow's target, as rwc.flows records it,
// that every event of the flow keeps in details.target ($1 is the flow):
// the evidence that survives the loss of the flow's row (see
// docs/concepts.md, "When the state is damaged").
const targetEvidence = `SELECT jsonb_build_object('target', jsonb_build_object('schema', target_schema, 'table', target_table,
	'oid', target_oid, 'pipeline', pipeline, 'query_fingerprint', query_fingerprint)) FROM rwc.flows WHERE flow = $1`

// StateReport is what rwc state check found in rwc's state, or what rwc
// state repair did and what it left.
type StateReport struct {
	// State is "healthy", "damaged" (findings), "old" (an older version,
	// which the next rwc apply upgrades) or "none" (no state yet).
	State string `json:"state"`
	// SchemaVersion is what rwc.schema_version says (null: nothing
	// readable); ExpectedVersion is this rwc's.
	SchemaVersion   *int           `json:"schema_version"`
	ExpectedVersion int            `json:"expected_version"`
	Flows           int            `json:"flows"` // rows of rwc.flows
	Findings        []StateFinding `json:"findings"`
	// Repaired: what rwc state repair changed, in order (check: none).
	Repaired []string `json:"repaired,omitempty"`
}

// StateFinding is one thing wrong with the state.
type StateFinding struct {
	// Code: missing_table, missing_column, wrong_column, missing_key,
	// schema_version, flow_row_missing, not_adoptable, target_missing,
	// target_replaced or target_recreated.
	Code    string `json:"code"`
	Object  string `json:"object"`         // rwc.events, rwc.flows.target_oid, flow NAME
	Flow    string `json:"flow,omitempty"` // the flow a finding is about
	Message string `json:"message"`
	// Repair is what rwc state repair does about it; "" when it does
	// nothing, and then Action says what to do.
	Repair string `json:"repair,omitempty"`
	Action string `json:"action,omitempty"`
}

// Healthy reports whether the state needs nothing (an old state is
// upgraded by the next rwc apply; no state is made by it).
func (r StateReport) Healthy() bool { return len(r.Findings) == 0 }

// CheckState inspects rwc's state without changing anything: the schema
// against this rwc's (tables, columns, keys and indexes), the version
// number, and each flow's row against its target. It needs no state
// migration: it is what to run when Migrate refuses a damaged state.
func CheckState(ctx context.Context, db *sql.DB, timeout time.Duration) (rep StateReport, err error) {
	defer func() {
		err = lockTimeout(ctx, db, "rwc state check", stateRels, timeout, "nothing was changed", err)
	}()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return rep, err
	}
	defer tx.Rollback()
	in, err := inspect(ctx, tx)
	if err != nil {
		return rep, err
	}
	return in.report(), nil
}

// inspection is what rwc state check reads.
type inspection struct {
	cat      *catalog
	rows     int // of rwc.schema_version (-1: unreadable)
	version  int // noVersion: none readable
	flows    map[string]flowRow
	evidence map[string]targetRecord
	deployed map[string]deployedTarget
	// identityLost: rwc.flows cannot say which table a flow's target is
	// (a column of flowIdentity missing or altered).
	identityLost bool
}

// flowRow is a row of rwc.flows: its target and the oid a table of that
// name has now (0: none).
type flowRow struct {
	schema, table string
	oid, current  uint32
	// recreated: a Citus table took the target's name, and the table rwc
	// made is gone, as alter_distributed_table leaves them (adoptRecreated).
	recreated bool
}

// targetRecord is the latest record of a flow's target in the event log
// (targetEvidence), with the oid a table of that name has now.
type targetRecord struct {
	event            int64
	schema, table    string
	pipeline         string
	queryFingerprint string
	oid, current     uint32
	lastRefresh      sql.NullTime // of the flow's own window, per the log
}

// deployedTarget is a flow of the last deployment's specs.
type deployedTarget struct {
	deployment    int64
	schema, table string
	current       uint32
}

// citusRecreated marks the flows whose target Citus built anew (see
// flowRow.recreated), on a database with Citus.
func (in *inspection) citusRecreated(ctx context.Context, q queryer) error {
	var citus bool
	if err := q.QueryRowContext(ctx, `SELECT `+hasCitus).Scan(&citus); err != nil || !citus {
		return err
	}
	for n, f := range in.flows {
		if f.current == 0 || f.current == f.oid {
			continue
		}
		err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = $1::oid)
			AND NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = $2::oid)`, f.current, f.oid).Scan(&f.recreated)
		if err != nil {
			return err
		}
		in.flows[n] = f
	}
	return nil
}

func (t flowRow) name() string { return displayName(t.schema, t.table) }

// qualified is schema.table as SQL, for to_regclass.
func qualified(schema, table string) string {
	return pq.QuoteIdentifier(schema) + "." + pq.QuoteIdentifier(table)
}

// displayName is schema.table as quote_ident writes it, for a message:
// quoted only where SQL needs it.
func displayName(schema, table string) string {
	return diag.Visible(identText(schema) + "." + identText(table))
}

func identText(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return pq.QuoteIdentifier(s)
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// intact reports whether table t has columns cols as rwc made them.
func (c *catalog) intact(t string, cols ...string) bool {
	have, ok := c.tables[t]
	if !ok {
		return false
	}
	for _, tbl := range stateSchema {
		if tbl.name != t {
			continue
		}
		for _, want := range tbl.columns {
			if len(cols) > 0 && !slices.Contains(cols, want.name) {
				continue
			}
			if got, ok := have[want.name]; !ok || got.typ != want.typ {
				return false
			}
		}
	}
	return true
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// inspect reads what check and repair decide from. Each part is read only
// where the tables it needs are intact: a damaged state is reported, not
// tripped over.
func inspect(ctx context.Context, q querier) (*inspection, error) {
	in := &inspection{rows: -1, version: noVersion, flows: map[string]flowRow{}, evidence: map[string]targetRecord{}, deployed: map[string]deployedTarget{}}
	var err error
	if in.cat, err = readCatalog(ctx, q); err != nil {
		return nil, err
	}
	if !in.cat.schema {
		return in, nil
	}
	if in.cat.intact("schema_version") {
		if err := q.QueryRowContext(ctx, `SELECT count(*), coalesce(max(version), -1) FROM rwc.schema_version`).Scan(&in.rows, &in.version); err != nil {
			return nil, err
		}
		if in.rows == 0 {
			in.version = noVersion
		}
	}
	in.identityLost = !in.cat.intact("flows", flowIdentity...)
	if !in.identityLost {
		rows, err := q.QueryContext(ctx, `SELECT flow, target_schema, target_table, target_oid,
			coalesce(to_regclass(quote_ident(target_schema) || '.' || quote_ident(target_table))::oid, 0) FROM rwc.flows`)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var f flowRow
			if err := rows.Scan(&name, &f.schema, &f.table, &f.oid, &f.current); err != nil {
				rows.Close()
				return nil, err
			}
			in.flows[name] = f
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if err := in.citusRecreated(ctx, q); err != nil {
			return nil, err
		}
	}
	if in.cat.intact("events", "id", "flow", "kind", "action", "started_at", "details") {
		if err := in.readEvidence(ctx, q); err != nil {
			return nil, err
		}
	}
	if in.cat.intact("deployments", "id", "specs") {
		if err := in.readDeployed(ctx, q); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func (in *inspection) readEvidence(ctx context.Context, q querier) error {
	rows, err := q.QueryContext(ctx, `SELECT e.flow, e.id, e.t->>'schema', e.t->>'table', coalesce(e.t->>'pipeline', ''),
			coalesce(e.t->>'query_fingerprint', ''), coalesce(e.t->>'oid', '0'),
			coalesce(to_regclass(quote_ident(e.t->>'schema') || '.' || quote_ident(e.t->>'table'))::oid, 0),
			(SELECT max(started_at) FROM rwc.events w WHERE w.flow = e.flow AND w.kind = 'planning_information' AND w.action <> 'backfill')
		FROM (SELECT DISTINCT ON (flow) flow, id, details->'target' AS t FROM rwc.events
			WHERE jsonb_typeof(details->'target') = 'object' AND details->'target' ?& ARRAY['schema', 'table', 'oid']
			ORDER BY flow, id DESC) e`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, oid string
		var r targetRecord
		if err := rows.Scan(&name, &r.event, &r.schema, &r.table, &r.pipeline, &r.queryFingerprint, &oid, &r.current, &r.lastRefresh); err != nil {
			return err
		}
		if _, err := fmt.Sscan(oid, &r.oid); err != nil {
			continue // not an oid: no evidence
		}
		in.evidence[name] = r
	}
	return rows.Err()
}

func (in *inspection) readDeployed(ctx context.Context, q querier) error {
	var id int64
	var raw []byte
	err := q.QueryRowContext(ctx, `SELECT id, specs FROM rwc.deployments ORDER BY id DESC LIMIT 1`).Scan(&id, &raw)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	var specs map[string]string
	if json.Unmarshal(raw, &specs) != nil {
		return nil // an unreadable snapshot names no flow
	}
	p, _ := spec.Load(diff.Snapshot(specs), "")
	for _, pl := range p.Pipelines {
		for _, t := range pl.Tables {
			d := deployedTarget{deployment: id, schema: pl.Schema, table: t.Name}
			if err := q.QueryRowContext(ctx, `SELECT coalesce(to_regclass($1)::oid, 0)`, qualified(d.schema, d.table)).Scan(&d.current); err != nil {
				return err
			}
			in.deployed[t.Name] = d
		}
	}
	return nil
}

// versionState says what the version number is worth: "none" (no state
// yet), "newer", "old" (an older state, exactly that version's), "ok", or
// "wrong" (missing, several rows, or not the schema's).
func (in *inspection) versionState() string {
	_, hasVersionTable := in.cat.tables["schema_version"]
	switch {
	case !in.cat.schema:
		return "none"
	case in.version == noVersion && !in.cat.hasStateTables() && (!hasVersionTable || in.rows == 0):
		return "none"
	case in.rows > 1 || in.version == noVersion:
		return "wrong"
	case in.version > stateVersion:
		return "newer"
	case in.version < stateVersion && len(in.cat.schemaProblems(in.version)) == 0:
		return "old"
	case in.version < stateVersion:
		return "wrong"
	}
	return "ok"
}

// adoptable is a flow without a row whose target the event log shows rwc
// created: the table of the recorded name has the recorded oid, and no
// other flow's row names it.
func (in *inspection) adoptable(name string) (targetRecord, bool) {
	if _, ok := in.flows[name]; ok && !in.identityLost {
		return targetRecord{}, false
	}
	r, ok := in.evidence[name]
	if !ok || r.current == 0 || r.current != r.oid {
		return r, false
	}
	for other, f := range in.flows {
		if other != name && f.schema == r.schema && f.table == r.table {
			return r, false
		}
	}
	return r, true
}

// report turns the inspection into findings.
func (in *inspection) report() StateReport {
	rep := StateReport{ExpectedVersion: stateVersion, Flows: len(in.flows), Findings: []StateFinding{}}
	if in.version != noVersion {
		v := in.version
		rep.SchemaVersion = &v
	}
	switch in.versionState() {
	case "none":
		rep.State = "none"
		return rep
	case "old":
		rep.State = "old"
		return rep
	case "newer":
		rep.State = "damaged"
		rep.Findings = append(rep.Findings, StateFinding{Code: "schema_version", Object: "rwc.schema_version",
			Message: fmt.Sprintf("the state is version %d, newer than this rwc understands (%d)", in.version, stateVersion),
			Action:  "upgrade rwc"})
		return rep
	case "wrong":
		msg := "rwc.schema_version is missing or unreadable"
		switch {
		case in.rows > 1:
			msg = fmt.Sprintf("rwc.schema_version holds %d rows, not one", in.rows)
		case in.rows == 0:
			msg = "rwc.schema_version is empty"
		case in.version != noVersion:
			msg = fmt.Sprintf("rwc.schema_version says version %d, but the schema is not that version's", in.version)
		}
		rep.Findings = append(rep.Findings, StateFinding{Code: "schema_version", Object: "rwc.schema_version", Message: msg,
			Repair: fmt.Sprintf("sets it to %d once the schema is complete, and clears the fingerprints, so that each flow's next refresh recomputes its whole window", stateVersion)})
	}
	for _, p := range in.cat.schemaProblems(stateVersion) {
		if p.table == "schema_version" && p.code == "missing_table" && len(rep.Findings) > 0 {
			continue // said above
		}
		rep.Findings = append(rep.Findings, StateFinding{Code: p.code, Object: p.object, Message: p.text, Repair: repairText(p)})
	}
	in.flowFindings(&rep)
	rep.State = "healthy"
	if len(rep.Findings) > 0 {
		rep.State = "damaged"
	}
	return rep
}

// repairText is what rwc state repair does about a schema problem.
func repairText(p schemaProblem) string {
	switch p.code {
	case "missing_table":
		switch p.table {
		case "events":
			return "recreates it, empty: the refresh history it held is lost"
		case "fingerprints":
			return "recreates it, empty: each flow's next refresh recomputes its whole window (PRIOR_REPLACE_WHERE_PREDICATE_MISSING)"
		case "flows":
			return "recreates it, and re-adopts each target that the event log shows rwc created; each such flow's next refresh recomputes its whole window"
		case "deployments":
			return "recreates it, empty: until the next rwc apply records a deployment, rwc plan has no deployed specs to diff against"
		case "backfills", "backfill_batches":
			return "recreates it, empty: the ledger of applied backfill files is lost, so rwc apply would run every backfill file in the specs again; remove the applied ones from pipelines/backfills first"
		case "expectation_results":
			return "recreates it, empty: rwc status shows no expectation results until the next refresh (or rwc test) checks them; the event log keeps each refresh's"
		case "schema_version":
			return fmt.Sprintf("recreates it at version %d, and clears the fingerprints", stateVersion)
		}
	case "missing_column":
		if p.table == "flows" && slices.Contains(flowIdentity, p.column) {
			return "adds it back; rwc.flows can no longer say which table each flow's target is, so its rows are recreated from the event log's evidence (re-adopted) and each flow's next refresh recomputes its whole window"
		}
		return "adds it back (rows already there get its default, or an empty value)"
	case "wrong_column":
		if p.table == "flows" && slices.Contains(flowIdentity, p.column) {
			return "alters it back; rwc.flows' rows are recreated from the event log's evidence (re-adopted)"
		}
		return "alters it back as rwc made it"
	case "missing_key":
		return "recreates it"
	case "newer_object":
		return fmt.Sprintf("keeps it: rwc.schema_version is set to %d", stateVersion)
	}
	return ""
}

const renameAside = "rename the table aside (ALTER TABLE … RENAME TO …): rwc apply then creates the target and fills its window, and you can copy the rows you want to keep back into it (rows outside the window are kept by later refreshes)"

func (in *inspection) flowFindings(rep *StateReport) {
	var names []string
	for n := range in.flows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := in.flows[n]
		if in.identityLost {
			break
		}
		switch {
		case f.current == 0:
			rep.Findings = append(rep.Findings, StateFinding{Code: "target_missing", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("the target %s of flow %s is gone (dropped outside rwc)", f.name(), n),
				Action:  "rwc apply creates it again and fills its window (rows outside the window went with the table); if the flow left the specs, rwc apply --drop-removed forgets it"})
		case f.recreated:
			rep.Findings = append(rep.Findings, StateFinding{Code: "target_recreated", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("the table %s has a new table id (oid %d; rwc.flows records %d, a table now gone) and is a Citus table, as Citus's alter_distributed_table leaves a table it rebuilt", f.name(), f.current, f.oid),
				Action:  "rwc apply adopts it at the flow's next refresh if its window holds the rows rwc left there, and refuses it, saying so, if not (docs/citus.md); if it was not Citus that rebuilt it: drop it, and rwc apply creates and fills the target"})
		case f.current != f.oid:
			rep.Findings = append(rep.Findings, StateFinding{Code: "target_replaced", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("the table %s is not the target rwc created for flow %s (oid %d; rwc.flows records %d): it was dropped and created again outside rwc, and rwc refuses to refresh it", f.name(), n, f.current, f.oid),
				Action:  "drop it, and rwc apply creates and fills the target; or " + renameAside})
		}
	}
	// Flows without a row: those the event log or the last deployment names.
	seen := map[string]bool{}
	var lost []string
	for n := range in.evidence {
		seen[n] = true
		lost = append(lost, n)
	}
	for n := range in.deployed {
		if !seen[n] {
			lost = append(lost, n)
		}
	}
	sort.Strings(lost)
	for _, n := range lost {
		if _, ok := in.flows[n]; ok && !in.identityLost {
			continue
		}
		r, hasRecord := in.evidence[n]
		d, deployed := in.deployed[n]
		if r, ok := in.adoptable(n); ok {
			rep.Findings = append(rep.Findings, StateFinding{Code: "flow_row_missing", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("flow %s has no row in rwc.flows, but its target %s is the table rwc created (oid %d, as event #%d recorded)", n, displayName(r.schema, r.table), r.oid, r.event),
				Repair:  "re-adopts it: recreates its row with the table's columns and oid, without touching its rows; its next refresh recomputes its whole window (PRIOR_REPLACE_WHERE_PREDICATE_MISSING) and keeps every row outside it"})
			continue
		}
		switch {
		case hasRecord && r.current != 0 && r.current != r.oid:
			rep.Findings = append(rep.Findings, StateFinding{Code: "not_adoptable", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("flow %s has no row in rwc.flows, and the table %s is not the one rwc created for it (oid %d; event #%d recorded %d): rwc does not adopt it", n, displayName(r.schema, r.table), r.current, r.event, r.oid),
				Action:  renameAside})
		case hasRecord && r.current != 0:
			rep.Findings = append(rep.Findings, StateFinding{Code: "not_adoptable", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("flow %s has no row in rwc.flows, and another flow's row names its table %s: rwc does not adopt it", n, displayName(r.schema, r.table)),
				Action:  "rename one of the flows' tables in the specs"})
		case !hasRecord && deployed && d.current != 0:
			rep.Findings = append(rep.Findings, StateFinding{Code: "not_adoptable", Object: "flow " + n, Flow: n,
				Message: fmt.Sprintf("flow %s (deployment #%d) has no row in rwc.flows, and the event log holds no record of its target's identity, so nothing shows that the table %s is the one rwc created: rwc does not adopt it, and rwc apply refuses it", n, d.deployment, displayName(d.schema, d.table)),
				Action:  renameAside})
		}
	}
}

// RepairState recreates what is missing of rwc's bookkeeping, in one
// transaction under the state's migration lock: tables, columns, keys and
// indexes as this rwc has them, the version number, and the rows of flows
// whose targets the event log shows rwc created (re-adopted with the
// table's current oid and columns). It never reads a target's rows, let
// alone changes one; every flow it touches recomputes its whole window at
// its next refresh. Running it again changes nothing. What it cannot mend
// (a table rwc cannot show it created, a target gone) stays in the
// report's findings.
func RepairState(ctx context.Context, db *sql.DB, timeout time.Duration) (rep StateReport, err error) {
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	defer func() {
		err = lockTimeout(ctx, db, "rwc state repair", stateRels, timeout, "nothing was changed", err)
	}()
	tx, err := beginWaiting(ctx, db, timeout)
	if err != nil {
		return rep, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return rep, err
	}
	in, err := inspect(ctx, tx)
	if err != nil {
		return rep, err
	}
	switch in.versionState() {
	case "none", "old":
		return in.report(), nil // nothing to repair: rwc apply creates or upgrades it
	case "newer":
		return rep, fmt.Errorf("the database's rwc state is version %d, newer than this rwc understands (%d): upgrade rwc; nothing was changed", in.version, stateVersion)
	}
	r := &repairer{ctx: ctx, tx: tx}
	if err := r.schema(in); err != nil {
		return rep, err
	}
	if in, err = inspect(ctx, tx); err != nil {
		return rep, err
	}
	if err := r.adopt(in); err != nil {
		return rep, err
	}
	if in, err = inspect(ctx, tx); err != nil {
		return rep, err
	}
	rep = in.report()
	rep.Repaired = r.did
	if rep.Repaired == nil {
		rep.Repaired = []string{}
	}
	if err := tx.Commit(); err != nil {
		return rep, err
	}
	return rep, nil
}

type repairer struct {
	ctx context.Context
	tx  *sql.Tx
	did []string
}

// RepairError is a step of rwc state repair that PostgreSQL refused; the
// whole repair was rolled back.
type RepairError struct {
	Step string
	Err  error
}

func (e *RepairError) Error() string {
	msg := serverWords(e.Err)
	if pe := (*pq.Error)(nil); errors.As(e.Err, &pe) && pe.Detail != "" {
		msg += "; " + pe.Detail
	}
	return fmt.Sprintf("rwc state repair: %s failed: %s; the repair was rolled back and nothing was changed", e.Step, msg)
}

func (e *RepairError) Unwrap() error { return e.Err }

func (r *repairer) exec(step, stmt string, args ...any) error {
	if _, err := r.tx.ExecContext(r.ctx, stmt, args...); err != nil {
		return &RepairError{Step: step, Err: err}
	}
	return nil
}

// schema makes the state schema this rwc's, and its version number right.
func (r *repairer) schema(in *inspection) error {
	cat := in.cat
	clearFingerprints := in.versionState() == "wrong"
	resetFlows := false
	for _, t := range stateSchema {
		tq := "rwc." + pq.QuoteIdentifier(t.name)
		have, ok := cat.tables[t.name]
		if !ok {
			if err := r.exec("creating "+tq, t.createSQL()); err != nil {
				return err
			}
			r.did = append(r.did, "created table rwc."+t.name+" (empty)")
			if t.name == "schema_version" {
				clearFingerprints = true
			}
			continue
		}
		for _, c := range t.columns {
			got, present := have[c.name]
			changed, err := r.column(t, c, got, present)
			if err != nil {
				return err
			}
			if changed && t.name == "flows" && slices.Contains(flowIdentity, c.name) {
				resetFlows = true
			}
		}
	}
	// Keys after every table is there: a foreign key needs the table it
	// refers to.
	cat, err := readCatalog(r.ctx, r.tx)
	if err != nil {
		return err
	}
	for _, t := range stateSchema {
		tq := "rwc." + pq.QuoteIdentifier(t.name)
		for _, k := range t.keys {
			if cat.has(t.name, k) {
				continue
			}
			step := "recreating the " + keyText(k) + " of " + tq
			if k.kind == "index" {
				if err := r.exec(step, k.indexSQL(t.name)); err != nil {
					return err
				}
			} else {
				if k.kind == "foreign key" {
					// Batches of backfills the ledger lost have no file to
					// belong to.
					if err := r.exec(step, `DELETE FROM `+tq+` b WHERE NOT EXISTS (SELECT FROM rwc.`+pq.QuoteIdentifier(k.ref)+` f WHERE f.path = b.path)`); err != nil {
						return err
					}
				}
				if err := r.exec(step, "ALTER TABLE "+tq+" ADD "+k.keySQL()); err != nil {
					return err
				}
			}
			r.did = append(r.did, "recreated rwc."+t.name+"'s "+keyText(k))
		}
	}
	var rows, v int
	if err := r.tx.QueryRowContext(r.ctx, `SELECT count(*), coalesce(max(version), -1) FROM rwc.schema_version`).Scan(&rows, &v); err != nil {
		return &RepairError{Step: "reading rwc.schema_version", Err: err}
	}
	if rows != 1 || v != stateVersion {
		if err := r.exec("setting rwc.schema_version", `DELETE FROM rwc.schema_version; INSERT INTO rwc.schema_version VALUES (`+fmt.Sprint(stateVersion)+`)`); err != nil {
			return err
		}
		r.did = append(r.did, fmt.Sprintf("set rwc.schema_version to %d", stateVersion))
		clearFingerprints = true
	}
	if resetFlows {
		// Which table each row names cannot be trusted any more: the rows
		// go, and adopt brings back those the event log vouches for.
		if err := r.exec("clearing rwc.flows", `DELETE FROM rwc.flows`); err != nil {
			return err
		}
		r.did = append(r.did, "cleared rwc.flows, whose rows no longer said which table each target is")
		clearFingerprints = true
	}
	if clearFingerprints {
		if err := r.exec("clearing rwc.fingerprints", `DELETE FROM rwc.fingerprints`); err != nil {
			return err
		}
		r.did = append(r.did, "cleared rwc.fingerprints: each flow's next refresh recomputes its whole window")
	}
	return nil
}

// column makes column c of table t as rwc made it; changed: it did
// anything.
func (r *repairer) column(t stateTable, c stateColumn, got catalogCol, present bool) (bool, error) {
	tq := "rwc." + pq.QuoteIdentifier(t.name)
	cq := pq.QuoteIdentifier(c.name)
	obj := "rwc." + t.name + "." + c.name
	step := "repairing column " + obj
	if !present {
		stmt := "ALTER TABLE " + tq + " ADD COLUMN " + c.columnSQL()
		if !c.serial && c.notNull {
			stmt = "ALTER TABLE " + tq + " ADD COLUMN " + cq + " " + c.typ + " NOT NULL DEFAULT " + c.fill()
			if c.def == "" {
				stmt += "; ALTER TABLE " + tq + " ALTER COLUMN " + cq + " DROP DEFAULT"
			}
		}
		if err := r.exec(step, stmt); err != nil {
			return false, err
		}
		r.did = append(r.did, "added column "+obj)
		return true, nil
	}
	changed := false
	if got.typ != c.typ {
		if err := r.exec(step, "ALTER TABLE "+tq+" ALTER COLUMN "+cq+" TYPE "+c.typ+" USING "+cq+"::text::"+c.typ); err != nil {
			return false, err
		}
		r.did = append(r.did, "altered column "+obj+" back to "+c.typ)
		changed = true
	}
	if got.notNull != c.notNull {
		stmt := "ALTER TABLE " + tq + " ALTER COLUMN " + cq + " DROP NOT NULL"
		if c.notNull {
			stmt = "UPDATE " + tq + " SET " + cq + " = " + c.fill() + " WHERE " + cq + " IS NULL; ALTER TABLE " + tq + " ALTER COLUMN " + cq + " SET NOT NULL"
			if c.serial {
				stmt = "DELETE FROM " + tq + " WHERE " + cq + " IS NULL; ALTER TABLE " + tq + " ALTER COLUMN " + cq + " SET NOT NULL"
			}
		}
		if err := r.exec(step, stmt); err != nil {
			return false, err
		}
		r.did = append(r.did, "made column "+obj+" "+map[bool]string{true: "NOT NULL", false: "nullable"}[c.notNull]+" again")
		changed = true
	}
	if (c.def != "" || c.serial) && !got.hasDef {
		stmt := "ALTER TABLE " + tq + " ALTER COLUMN " + cq + " SET DEFAULT " + c.def
		if c.serial {
			var seq sql.NullString
			if err := r.tx.QueryRowContext(r.ctx, `SELECT pg_get_serial_sequence($1, $2)`, tq, c.name).Scan(&seq); err != nil {
				return false, &RepairError{Step: step, Err: err}
			}
			name := seq.String
			if !seq.Valid {
				name = "rwc." + pq.QuoteIdentifier(t.name+"_"+c.name+"_seq")
				if err := r.exec(step, "CREATE SEQUENCE IF NOT EXISTS "+name+" OWNED BY "+tq+"."+cq); err != nil {
					return false, err
				}
			}
			stmt = "SELECT setval(" + pq.QuoteLiteral(name) + ", coalesce((SELECT max(" + cq + ") FROM " + tq + "), 0) + 1, false); ALTER TABLE " + tq +
				" ALTER COLUMN " + cq + " SET DEFAULT nextval(" + pq.QuoteLiteral(name) + ")"
		}
		if err := r.exec(step, stmt); err != nil {
			return false, err
		}
		r.did = append(r.did, "gave column "+obj+" its default again")
		changed = true
	}
	return changed, nil
}

// adopt recreates the row of each flow whose target the event log shows
// rwc created (adoptable), under the flow's lock, with the table's oid and
// columns as the catalog has them now; no window and no fingerprints, so
// the next refresh recomputes the whole window. The table itself is not
// read or locked.
func (r *repairer) adopt(in *inspection) error {
	var names []string
	for n := range in.evidence {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rec, ok := in.adoptable(n)
		if !ok {
			continue
		}
		step := "re-adopting the target of flow " + n
		if err := r.exec(step, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, advisoryNamespace+n); err != nil {
			return err
		}
		var last any
		if rec.lastRefresh.Valid {
			last = rec.lastRefresh.Time
		}
		if err := r.exec(step, `INSERT INTO rwc.flows (flow, pipeline, target_schema, target_table, target_oid, columns, query_fingerprint, last_refresh_at)
			SELECT $1, $2, $3, $4, $5::oid,
				coalesce(jsonb_agg(jsonb_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum), '[]'),
				$6, $7
			FROM pg_attribute a WHERE a.attrelid = $5::oid AND a.attnum > 0 AND NOT a.attisdropped`,
			n, rec.pipeline, rec.schema, rec.table, int64(rec.oid), rec.queryFingerprint, last); err != nil {
			return err
		}
		if err := r.exec(step, `DELETE FROM rwc.fingerprints WHERE flow = $1`, n); err != nil {
			return err
		}
		r.did = append(r.did, fmt.Sprintf("re-adopted %s as the target of flow %s (its rows untouched; its next refresh recomputes the whole window)", displayName(rec.schema, rec.table), n))
	}
	return nil
}

// Describe names what a report's state is, for its first line.
func (r StateReport) Describe() string {
	v := "none"
	if r.SchemaVersion != nil {
		v = fmt.Sprint(*r.SchemaVersion)
	}
	switch r.State {
	case "none":
		return "no state yet (rwc apply creates it)"
	case "old":
		return fmt.Sprintf("version %s, older than this rwc's %d: the next rwc apply upgrades it", v, r.ExpectedVersion)
	case "healthy":
		return fmt.Sprintf("healthy (version %s, %s)", v, diag.Plural(r.Flows, "flow"))
	}
	return fmt.Sprintf("%s (rwc.schema_version: %s; this rwc's: %d)", diag.Plural(len(r.Findings), "finding"), v, r.ExpectedVersion)
}

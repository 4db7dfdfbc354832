package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"
	"github.com/rwc-dev/rwc/compile"
)

// Event is one record of the refresh log.
type Event struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	Outcome
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// Events returns the refresh log, oldest first, for one flow or all ("").
func Events(ctx context.Context, db *sql.DB, flow string, limit int) (_ []Event, err error) {
	defer func() { err = lockTimeout(ctx, db, "the event log", stateRels, 0, "nothing was read", err) }()
	rows, err := db.QueryContext(ctx, `SELECT * FROM (
		SELECT id, flow, kind, action, reasons, coalesce(predicate_cel, ''), coalesce(predicate_sql, ''),
			coalesce(rows_deleted, 0), coalesce(rows_inserted, 0), started_at, duration_ms, coalesce(error, ''),
			details->'backfill', details->'expectations'
		FROM rwc.events WHERE $1 = '' OR flow = $1 ORDER BY id DESC LIMIT $2) e ORDER BY id`, flow, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var backfill, expectations []byte
		var reasons []string // the words as logged, retired ones too
		if err := rows.Scan(&e.ID, &e.Flow, &e.Kind, &e.Action, pq.Array(&reasons), &e.PredicateCEL, &e.PredicateSQL,
			&e.RowsDeleted, &e.RowsInserted, &e.StartedAt, &e.DurationMS, &e.Error, &backfill, &expectations); err != nil {
			return nil, err
		}
		e.Reasons = make([]compile.Reason, len(reasons))
		for i, r := range reasons {
			e.Reasons[i] = compile.Reason(r)
		}
		if backfill != nil {
			e.Backfill = &BackfillNote{}
			if err := json.Unmarshal(backfill, e.Backfill); err != nil {
				return nil, fmt.Errorf("event %d: backfill: %v", e.ID, err)
			}
		}
		if expectations != nil {
			if err := json.Unmarshal(expectations, &e.Expectations); err != nil {
				return nil, fmt.Errorf("event %d: expectations: %v", e.ID, err)
			}
		}
		e.StartedAt = e.StartedAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// FlowStatus is one flow as the state knows it.
type FlowStatus struct {
	Flow          string     `json:"flow"`
	Pipeline      string     `json:"pipeline"`
	Target        string     `json:"target"`
	PredicateCEL  string     `json:"window_cel"`
	PredicateSQL  string     `json:"window_sql"`
	LastRefreshAt *time.Time `json:"last_refresh_at"`
	LastAction    string     `json:"last_action"`
	// LastActionAt is when the last action started: after a backfill or
	// an override, later than LastRefreshAt (the flow's own window).
	LastActionAt *time.Time `json:"last_action_at"`
	LastReasons  []string   `json:"last_reasons"`
	LastError    string     `json:"last_error,omitempty"`
	// Coverage is filled by the caller from the specs (see Coverage).
	Coverage []ColumnCoverage `json:"coverage,omitempty"`
	// Capture is how the next refresh will know what changed.
	Capture Capture `json:"capture"`
	// Expectations: the last result of each of the flow's expectations
	// (of a refresh, or of rwc test).
	Expectations []RecordedResult `json:"expectations,omitempty"`
}

// Capture is the health of a flow's change capture: the fingerprints its
// last refresh stored (rwc installs nothing on the sources; see
// docs/reasons.md), and the dead rows its refreshes left in the target.
type Capture struct {
	// Fingerprinted: the last refresh stored fingerprints, so the next one
	// can be incremental; when false, the next refresh recomputes the
	// window (the flow is not incremental by its shape, or has not been
	// refreshed since rwc kept fingerprints).
	Fingerprinted bool `json:"fingerprinted"`
	Sources       int  `json:"sources"`    // sources fingerprinted
	Partitions    int  `json:"partitions"` // partition values of the target's window
	// Rewritten: the rows the last refresh inserted, which the next one
	// recognises by their transaction instead of by fingerprints; -1 when
	// it wrote none. RewrittenPartitions: the partitions it rewrote (among
	// Partitions); 0 with Rewritten >= 0: the whole window.
	Rewritten           int64 `json:"rewritten_rows"`
	RewrittenPartitions int   `json:"rewritten_partitions"`
	DeadRows            int64 `json:"dead_rows"` // left in the target since its last VACUUM
	// Vacuum: who vacuums the target, and when (see vacuumPolicy).
	Vacuum Vacuum `json:"vacuum"`
	// Mode is the spec's capture: ("" when status read no specs); Tables,
	// for capture: triggers, each table's trigger as it stands now and
	// whether it vouches for the table (see CaptureHealth).
	Mode   string         `json:"mode,omitempty"`
	Tables []TableCapture `json:"tables,omitempty"`
	// Maintained: for maintain: immediate, each source's triggers now.
	Maintained []MaintainedSource `json:"maintained,omitempty"`
}

// CaptureHealth is, for a flow capturing by triggers, each of its tables'
// trigger now, read-only: whether it vouches for the table since the last
// refresh, or why it does not (the next refresh probes that table). Of a
// partitioned target, the partitions of the window the last refresh
// stored count, as they did for it.
func CaptureHealth(ctx context.Context, db *sql.DB, f *compile.Flow) ([]TableCapture, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var parts []string
	if f.Partitioned() {
		st, err := loadFlowState(ctx, readOnlyTx{tx}, f.Name())
		if err != nil {
			return nil, err
		}
		if prior, ok := f.StoredWindow(st); ok {
			obs, err := partitionsNow(ctx, tx, f)
			if err != nil {
				return nil, err
			}
			parts = f.WindowPartitions(prior, obs)
		}
	}
	return readEpochs(ctx, tx, f, parts)
}

// Status is the deployed revision and every flow.
type Status struct {
	Commit     string       `json:"deployed_commit"`
	Dirty      bool         `json:"dirty"`
	DeployedAt *time.Time   `json:"deployed_at"`
	DeployedBy string       `json:"deployed_by"`
	Flows      []FlowStatus `json:"flows"`
	// Backfills is the ledger (see Ledger), filled by the caller.
	Backfills []LedgerEntry `json:"backfills"`
}

// ReadStatus reads the state.
func ReadStatus(ctx context.Context, db *sql.DB) (_ Status, err error) {
	defer func() { err = lockTimeout(ctx, db, "rwc's state", stateRels, 0, "nothing was read", err) }()
	var s Status
	var commit, by sql.NullString
	var at sql.NullTime
	err = db.QueryRowContext(ctx, `SELECT commit, dirty, deployed_at, deployed_by FROM rwc.deployments ORDER BY id DESC LIMIT 1`).
		Scan(&commit, &s.Dirty, &at, &by)
	if err != nil && err != sql.ErrNoRows {
		return s, err
	}
	s.Commit, s.DeployedBy = commit.String, by.String
	if at.Valid {
		t := at.Time.UTC()
		s.DeployedAt = &t
	}
	rows, err := db.QueryContext(ctx, `SELECT f.flow, f.pipeline, quote_ident(f.target_schema) || '.' || quote_ident(f.target_table),
			coalesce(f.predicate_cel, ''), coalesce(f.predicate_sql, ''), f.last_refresh_at,
			coalesce(e.action, ''), coalesce(e.reasons, '{}'), coalesce(e.error, ''), e.started_at,
			coalesce(fp.taken, false), coalesce(fp.sources, 0), coalesce(fp.partitions, 0), coalesce(fp.rewritten, -1), coalesce(fp.rewritten_partitions, 0), f.dead_rows,
			`+vacuumSettingsSQL+`
		FROM rwc.flows f
		LEFT JOIN pg_class c ON c.oid = to_regclass(quote_ident(f.target_schema) || '.' || quote_ident(f.target_table))
		LEFT JOIN LATERAL (SELECT action, reasons, error, started_at FROM rwc.events WHERE flow = f.flow ORDER BY id DESC LIMIT 1) e ON true
		LEFT JOIN LATERAL (SELECT bool_or(source = '' AND whole AND value = '') AS taken, count(DISTINCT source) FILTER (WHERE source <> '') AS sources,
				count(*) FILTER (WHERE source = '' AND NOT whole) AS partitions,
				max(n) FILTER (WHERE source = '' AND whole AND value = 'rewritten') AS rewritten,
				count(*) FILTER (WHERE source = '' AND NOT whole AND n = -3) AS rewritten_partitions
			FROM rwc.fingerprints WHERE flow = f.flow) fp ON true
		ORDER BY f.flow`)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var f FlowStatus
		var last, actionAt sql.NullTime
		var vs vacuumSettings
		if err := rows.Scan(append([]any{&f.Flow, &f.Pipeline, &f.Target, &f.PredicateCEL, &f.PredicateSQL, &last,
			&f.LastAction, pq.Array(&f.LastReasons), &f.LastError, &actionAt,
			&f.Capture.Fingerprinted, &f.Capture.Sources, &f.Capture.Partitions, &f.Capture.Rewritten, &f.Capture.RewrittenPartitions, &f.Capture.DeadRows},
			vs.dest()...)...); err != nil {
			return s, err
		}
		f.Capture.Vacuum, _ = vacuumPolicy(vs, 0)
		if last.Valid {
			t := last.Time.UTC()
			f.LastRefreshAt = &t
		}
		if actionAt.Valid {
			t := actionAt.Time.UTC()
			f.LastActionAt = &t
		}
		s.Flows = append(s.Flows, f)
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	rows.Close()
	results, err := LastResults(ctx, db)
	for i := range s.Flows {
		s.Flows[i].Expectations = results[s.Flows[i].Flow]
	}
	return s, err
}

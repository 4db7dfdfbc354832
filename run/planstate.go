package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/rwc-dev/rwc/compile"
)

// PlanState is what a plan reads from the database: the last deployment
// and every flow's state.
type PlanState struct {
	DeploymentID int64
	Commit       string
	Specs        map[string]string // nil when nothing is deployed
	Flows        map[string]compile.FlowState
	LastRefresh  map[string]string
}

// ReadPlanState reads the state without locking anything.
func ReadPlanState(ctx context.Context, db *sql.DB) (_ PlanState, err error) {
	defer func() { err = lockTimeout(ctx, db, "rwc's state", stateRels, 0, "nothing was changed", err) }()
	ps := PlanState{Flows: map[string]compile.FlowState{}, LastRefresh: map[string]string{}}
	var commit sql.NullString
	var specs string
	err = db.QueryRowContext(ctx, `SELECT id, commit, specs FROM rwc.deployments ORDER BY id DESC LIMIT 1`).Scan(&ps.DeploymentID, &commit, &specs)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return ps, err
	default:
		ps.Commit = commit.String
		if err := json.Unmarshal([]byte(specs), &ps.Specs); err != nil {
			return ps, err
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT flow, last_refresh_at FROM rwc.flows`)
	if err != nil {
		return ps, err
	}
	var names []string
	for rows.Next() {
		var name string
		var last sql.NullTime
		if err := rows.Scan(&name, &last); err != nil {
			rows.Close()
			return ps, err
		}
		names = append(names, name)
		if last.Valid {
			ps.LastRefresh[name] = last.Time.UTC().Format(time.RFC3339Nano)
		}
	}
	rows.Close()
	var guards map[string]bool
	if ps.Specs != nil {
		guards = guardsOf(ps.Specs)
	}
	for _, name := range names {
		st, err := loadFlowState(ctx, db, name)
		if err != nil {
			return ps, err
		}
		st.DeployedProtected = guards[name]
		ps.Flows[name] = st.FlowState
	}
	return ps, rows.Err()
}

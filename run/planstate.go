package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

// lastDeployment reads the last deployment: its id, commit and spec
// snapshot (file → content); id 0 and nil specs when there is none.
func lastDeployment(ctx context.Context, q queryer) (id int64, commit string, specs map[string]string, err error) {
	var c sql.NullString
	var raw []byte
	err = q.QueryRowContext(ctx, `SELECT id, commit, specs FROM rwc.deployments ORDER BY id DESC LIMIT 1`).Scan(&id, &c, &raw)
	switch {
	case err == sql.ErrNoRows:
		return 0, "", nil, nil
	case err != nil:
		return 0, "", nil, err
	}
	if err := json.Unmarshal(raw, &specs); err != nil {
		return 0, "", nil, fmt.Errorf("the specs of deployment #%d: %w", id, err)
	}
	return id, c.String, specs, nil
}

// ReadPlanState reads the state without locking anything.
func ReadPlanState(ctx context.Context, db *sql.DB) (_ PlanState, err error) {
	defer func() { err = lockTimeout(ctx, db, "rwc's state", stateRels, 0, "nothing was changed", err) }()
	ps := PlanState{Flows: map[string]compile.FlowState{}, LastRefresh: map[string]string{}}
	if err := verifyState(ctx, db); err != nil {
		return ps, err
	}
	if ps.DeploymentID, ps.Commit, ps.Specs, err = lastDeployment(ctx, db); err != nil {
		return ps, err
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
	var guards *guardSet
	if ps.Specs != nil {
		guards = guardsOf(ps.Specs)
	}
	for _, name := range names {
		st, err := loadFlowState(ctx, db, name)
		if err != nil {
			return ps, err
		}
		guards.apply(&st.FlowState, name)
		ps.Flows[name] = st.FlowState
	}
	return ps, rows.Err()
}

package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lib/pq"

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
		guards.apply(&st, name)
		ps.Flows[name] = st
	}
	return ps, rows.Err()
}

// CheckPlanCurrent refuses a saved plan, changing nothing, when anything it
// was computed from moved: the deployment, the spec files, a flow's last
// refresh.
func CheckPlanCurrent(ctx context.Context, db *sql.DB, saved *compile.Plan, p *compile.Project) error {
	st, err := ReadPlanState(ctx, db)
	if err != nil {
		return err
	}
	var moved []string
	if st.DeploymentID != saved.Basis.Deployment {
		moved = append(moved, fmt.Sprintf("the deployment (planned against #%d, now #%d)", saved.Basis.Deployment, st.DeploymentID))
	}
	if compile.SpecsHash(p) != saved.Basis.Specs {
		now := compile.FileHashes(p)
		var files []string
		for f, h := range now {
			if saved.Basis.SpecFiles[f] != h {
				files = append(files, f)
			}
		}
		for f := range saved.Basis.SpecFiles {
			if _, ok := now[f]; !ok {
				files = append(files, f+" (removed)")
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			files = []string{"the spec files in " + saved.SpecDir}
		}
		moved = append(moved, "spec files changed: "+strings.Join(files, ", "))
	}
	for flow, last := range st.LastRefresh {
		if saved.Basis.LastRefresh[flow] != last {
			moved = append(moved, fmt.Sprintf("flow %s was refreshed since (at %s)", flow, last))
		}
	}
	for flow := range saved.Basis.LastRefresh {
		if _, ok := st.LastRefresh[flow]; !ok {
			moved = append(moved, "flow "+flow+" lost its state")
		}
	}
	targets, err := targetsMoved(ctx, db, saved)
	if err != nil {
		return err
	}
	moved = append(moved, targets...)
	if len(moved) > 0 {
		sort.Strings(moved)
		return refuse("the saved plan is stale (%s); nothing was changed: run rwc plan again", strings.Join(moved, "; "))
	}
	return nil
}

// targetsMoved lists the flows whose target name holds another table than
// the saved plan saw (Basis.Targets): what it refused or adopted, or
// created, is no longer what apply would.
func targetsMoved(ctx context.Context, db *sql.DB, saved *compile.Plan) ([]string, error) {
	var planned []compile.FlowPlan
	var names []string
	for _, fp := range saved.Flows {
		if _, ok := saved.Basis.Targets[fp.Flow]; ok {
			planned, names = append(planned, fp), append(names, fp.Target)
		}
	}
	var now []int64
	if err := db.QueryRowContext(ctx, `SELECT coalesce(array_agg(coalesce(to_regclass(t)::oid, 0)::int8 ORDER BY n), '{}') FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)`,
		pq.Array(names)).Scan(pq.Array(&now)); err != nil {
		return nil, err
	}
	var moved []string
	for i, fp := range planned {
		if was := saved.Basis.Targets[fp.Flow]; uint32(now[i]) != was {
			moved = append(moved, fmt.Sprintf("the table under flow %s's target %s changed (table id %d when planned, %d now)", fp.Flow, fp.Target, was, now[i]))
		}
	}
	return moved, nil
}

// RowCounter counts, read-only, the target rows a refresh's statements
// delete (on the index rwc builds on the partition column, when the
// target has it), and asks PostgreSQL's planner how many rows their query
// yields, which costs no scan; a count that fails or times out (timeout:
// statement_timeout, 0 LossCountTimeout) is left out.
func RowCounter(ctx context.Context, db *sql.DB, timeout time.Duration) func(*compile.Flow, compile.Statements) compile.RowCounts {
	return func(f *compile.Flow, s compile.Statements) compile.RowCounts {
		var rc compile.RowCounts
		tx, err := readOnly(ctx, db, timeout)
		if err != nil {
			return rc
		}
		defer tx.Rollback()
		var exists bool
		if tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.Target).Scan(&exists) != nil || !exists {
			return rc
		}
		var n int64
		if s.Delete != "" && tx.QueryRowContext(ctx, "SELECT count(*) FROM "+s.Target+" WHERE "+s.PredicateSQL).Scan(&n) == nil {
			rc.RowsToDelete = &n
		}
		if s.Yield != "" {
			rc.EstimatedInserts = planRows(ctx, tx, s.Yield)
		}
		return rc
	}
}

// planRows is the planner's estimate of the rows query yields (nil:
// unknown). EXPLAIN without ANALYZE runs nothing.
func planRows(ctx context.Context, tx *sql.Tx, query string) *int64 {
	var raw string
	if tx.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+query).Scan(&raw) != nil {
		return nil
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if json.Unmarshal([]byte(raw), &out) != nil || len(out) == 0 {
		return nil
	}
	n := int64(out[0].Plan.Rows)
	return &n
}

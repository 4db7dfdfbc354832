package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// PlanExplain is rwc explain FLOW: the database's own plan (EXPLAIN
// (FORMAT JSON, VERBOSE), never ANALYZE: nothing runs) of the INSERT the
// refresh would send, and, for each scan of a table, whether the window's
// predicate reached it.
type PlanExplain struct {
	Flow      string          `json:"flow"`
	Statement string          `json:"statement"`
	Scans     []PlanScan      `json:"scans"`
	Plan      json.RawMessage `json:"plan"`
}

// PlanScan is one scan of a table in the plan.
type PlanScan struct {
	Relation string `json:"relation"` // schema.table
	Alias    string `json:"alias,omitempty"`
	Node     string `json:"node"` // Seq Scan, Index Scan, Bitmap Heap Scan, …
	// Conditions are the scan's Index Cond, Recheck Cond and Filter.
	Conditions []string `json:"conditions,omitempty"`
	// Window: a condition names one of the window's columns, so the scan
	// reads only the window's rows (rather than the table's whole
	// history).
	Window bool `json:"window"`
	// Target: the scan reads the flow's own target.
	Target bool `json:"target,omitempty"`
}

// ExplainPlan asks the database for the plan of req's INSERT, in a
// read-only transaction that is rolled back.
func ExplainPlan(ctx context.Context, db *sql.DB, req Request, opts Options) (PlanExplain, error) {
	f := req.Flow
	at := time.Now()
	if opts.Now != nil {
		at = opts.Now()
	}
	// The whole window's INSERT, as a recompute of the window sends it (an
	// incremental refresh narrows it to partitions, a plan of the same
	// shape).
	window, err := f.Predicate.Resolve(predicate.Resolution{Now: at, Zone: opts.Zone})
	if err != nil {
		return PlanExplain{}, err
	}
	obs, err := Observe(ctx, db, f, opts.StatementTimeout)
	if err != nil {
		return PlanExplain{}, err
	}
	stmts, err := f.Statements(window, false, obs)
	if err != nil {
		return PlanExplain{}, err
	}
	out := PlanExplain{Flow: f.Name(), Statement: stmts.Insert, Scans: []PlanScan{}}
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, f.Target()).Scan(&exists); err != nil {
		return out, err
	}
	if !exists {
		return out, fmt.Errorf("flow %s: its target %s does not exist yet, and the database cannot plan an INSERT into it: rwc apply (or rwc refresh %s) creates it", f.Name(), f.Target(), f.Name())
	}
	// Read-only, bounded, and with rwc's parser settings, as every read of
	// the user's SQL is.
	tx, err := readOnly(ctx, db, opts.StatementTimeout)
	if err != nil {
		return out, err
	}
	defer tx.Rollback()
	var raw string
	if err := tx.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON, VERBOSE) "+stmts.Insert).Scan(&raw); err != nil {
		return out, fmt.Errorf("flow %s: EXPLAIN: %w", f.Name(), err)
	}
	out.Plan = json.RawMessage(raw)
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return out, fmt.Errorf("flow %s: reading EXPLAIN's JSON: %w", f.Name(), err)
	}
	cols := map[string]bool{}
	if f.Predicate != nil {
		for _, c := range f.Predicate.Columns {
			cols[c] = true
		}
	}
	if f.PartitionBy != "" {
		cols[f.PartitionBy] = true
	}
	target := f.Table.Pipeline.Schema + "." + f.Table.Name
	for _, d := range doc {
		collectScans(&d.Plan, cols, target, &out.Scans)
	}
	return out, nil
}

type planNode struct {
	NodeType    string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Schema      string     `json:"Schema"`
	Alias       string     `json:"Alias"`
	IndexCond   string     `json:"Index Cond"`
	RecheckCond string     `json:"Recheck Cond"`
	Filter      string     `json:"Filter"`
	Plans       []planNode `json:"Plans"`
}

func collectScans(n *planNode, cols map[string]bool, target string, out *[]PlanScan) {
	if n.Relation != "" && n.NodeType != "ModifyTable" {
		s := PlanScan{Relation: n.Schema + "." + n.Relation, Alias: n.Alias, Node: n.NodeType}
		if s.Alias == n.Relation {
			s.Alias = ""
		}
		conds := []string{}
		add := func(kind, c string) {
			if c != "" {
				conds = append(conds, kind+": "+c)
			}
		}
		add("Index Cond", n.IndexCond)
		add("Recheck Cond", n.RecheckCond)
		add("Filter", n.Filter)
		for _, child := range n.Plans { // a Bitmap Heap Scan's Bitmap Index Scans
			if strings.HasPrefix(child.NodeType, "Bitmap") && child.Relation == "" {
				add("Index Cond", child.IndexCond)
			}
		}
		s.Conditions = conds
		s.Window = mentions(conds, cols)
		s.Target = s.Relation == target
		*out = append(*out, s)
	}
	for i := range n.Plans {
		collectScans(&n.Plans[i], cols, target, out)
	}
}

// mentions says whether a condition names one of cols as a column
// (alias.col, col, or quoted).
func mentions(conds []string, cols map[string]bool) bool {
	names := make([]string, 0, len(cols))
	for c := range cols {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, cond := range conds {
		for _, c := range names {
			for _, form := range []string{"." + c, "(" + c, " " + c, `"` + c + `"`} {
				i := strings.Index(cond, form)
				if i < 0 {
					continue
				}
				end := i + len(form)
				if end == len(cond) || !isIdentChar(cond[end]) {
					return true
				}
			}
		}
	}
	return false
}

func isIdentChar(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

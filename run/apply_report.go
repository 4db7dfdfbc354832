package run

import (
	"strconv"
	"time"

	"github.com/rwc-dev/rwc/compile"
)

// ApplyReport is what rwc apply did, as rwc apply --format json writes it
// and its markdown summary renders it: every refresh and backfill batch,
// in order, the flows removed from the specs, and whether the deployment
// was recorded.
type ApplyReport struct {
	Commit string `json:"commit,omitempty"` // the deployed commit ("" outside git)
	Dirty  bool   `json:"dirty"`
	// Deployed: every flow succeeded and the deployment was recorded (an
	// apply with --select, Select, records none).
	Deployed  bool            `json:"deployed"`
	Select    []string        `json:"select,omitempty"`
	StartedAt time.Time       `json:"started_at"`
	Duration  Millis          `json:"duration_ms"`
	Flows     []FlowReport    `json:"flows"`
	Removed   []RemovedReport `json:"removed,omitempty"`
	Error     string          `json:"error,omitempty"` // why the apply failed, when it did
	Summary   ApplySummary    `json:"summary"`
}

// FlowReport is one refresh, or one backfill batch, of an apply.
type FlowReport struct {
	Outcome
	Partitions  []string `json:"partitions,omitempty"`
	RowsOutside int64    `json:"rows_outside_window_lost,omitempty"`
	RowsLost    int64    `json:"rows_lost,omitempty"`
	Duration    Millis   `json:"duration_ms"`
	Error       string   `json:"error,omitempty"`
}

// RemovedReport is a flow the specs no longer define: its target dropped
// (--drop-removed) or kept, and why.
type RemovedReport struct {
	Flow        string `json:"flow"`
	Target      string `json:"target"`
	Dropped     bool   `json:"dropped"`
	KeptBecause string `json:"kept_because,omitempty"`
}

// ApplySummary counts what an apply did.
type ApplySummary struct {
	Refreshed    int   `json:"refreshed"`
	Failed       int   `json:"failed"`
	Skipped      int   `json:"skipped"`
	Batches      int   `json:"backfill_batches"`
	RowsDeleted  int64 `json:"rows_deleted"`
	RowsInserted int64 `json:"rows_inserted"`
}

// Millis is a duration written as whole milliseconds.
type Millis time.Duration

func (m Millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(m).Milliseconds(), 10), nil
}

// Add records a refresh's or a batch's result.
func (a *ApplyReport) Add(r Result) {
	fr := FlowReport{Outcome: r.Outcome, Partitions: r.Partitions, RowsOutside: r.RowsOutside, RowsLost: r.RowsLost, Duration: Millis(r.Duration)}
	s := &a.Summary
	if r.Err != nil {
		fr.Error = r.Err.Error()
	}
	switch {
	case r.Action == compile.ActionSkipped:
		s.Skipped++
	case r.Err != nil:
		s.Failed++
	case r.Backfill != nil:
		s.Batches++
	default:
		s.Refreshed++
	}
	if r.Err == nil {
		s.RowsDeleted += r.RowsDeleted
		s.RowsInserted += r.RowsInserted
	}
	a.Flows = append(a.Flows, fr)
}

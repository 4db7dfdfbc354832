package compile

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

// ExpectationResult is how one expectation fared on one refresh (or one
// rwc test): what the output, the event log and rwc status show.
type ExpectationResult struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	diag.Pos
	Passed bool `json:"passed"`
	// Failing counts what failed: rows for check, not_null, unique and
	// relationships; partitions for rows.max_change; 1 for a rows.min or
	// rows.max not met.
	Failing int64 `json:"failing"`
	// Checked is the rows checked: those the refresh wrote.
	Checked int64  `json:"checked_rows"`
	Message string `json:"message"`
	// Samples are up to MaxSamples failing rows (col=value, …), keys or
	// partitions.
	Samples []string `json:"samples,omitempty"`
}

// Failed reports whether the result fails the refresh (an error-severity
// failure).
func (r ExpectationResult) Failed() bool { return !r.Passed && r.Severity == "error" }

// CheckCounts is what the checks' queries answered.
type CheckCounts struct {
	// Before and Rows are per partition value (one "" key without a
	// partition column): the rows before the write, and the rows written
	// followed by Checks.RowsFor's failing counts.
	Before map[string]int64
	Rows   map[string][]int64
	// Apart are the failing counts of Checks.Apart, and of
	// Checks.Repeated's (those not run failed none), by expectation.
	Apart map[int]int64
}

// Evaluate turns the counts into one result per expectation, in the
// order written; samples are the caller's to fetch (Checks.Samples).
func (f *Flow) Evaluate(c Checks, n CheckCounts) []ExpectationResult {
	total := int64(0)
	failing := map[int]int64{}
	for _, row := range n.Rows {
		total += row[0]
		for j, i := range c.RowsFor {
			failing[i] += row[j+1]
		}
	}
	for i, v := range n.Apart {
		failing[i] = v
	}
	out := make([]ExpectationResult, len(f.Expectations))
	for i, e := range f.Expectations {
		r := ExpectationResult{Name: e.Name, Kind: e.Kind, Severity: e.Severity(), Pos: e.Pos, Checked: total, Failing: failing[i]}
		switch e.Kind {
		case spec.ExpectCheck:
			r.Message = fmt.Sprintf("%d of %d rows fail %s", r.Failing, total, spec.OneLine(e.Expectation.Check.Value))
		case spec.ExpectNotNull:
			r.Message = fmt.Sprintf("%d of %d rows have a NULL in %s", r.Failing, total, strings.Join(e.Columns.Columns, ", "))
		case spec.ExpectUnique:
			r.Message = fmt.Sprintf("%d of %d rows share their %s with another row", r.Failing, total, strings.Join(e.Columns.Columns, ", "))
			if e.AcrossTable {
				r.Message += " written or of the table"
			}
		case spec.ExpectRelationships:
			r.Message = fmt.Sprintf("%d of %d rows have a %s that %s does not hold", r.Failing, total, e.Rel.Column, e.Rel.ToSchema+"."+e.Rel.ToTable+"."+e.Rel.ToColumn)
		case spec.ExpectRows:
			r.Failing, r.Message, r.Samples = rowBounds(e.Rows, total, n, f.PartitionBy)
			if c.Before == "" && e.Rows.MaxChange > 0 && r.Failing == 0 {
				r.Message += "; max_change is checked by refreshes, against the rows they replace"
			}
		}
		r.Passed = r.Failing == 0
		out[i] = r
	}
	return out
}

// rowBounds checks rows:, returning what fails (the rows written for
// min/max, else the partitions that changed too much), why, and the
// partitions as samples.
func rowBounds(b *spec.RowBounds, total int64, n CheckCounts, col string) (int64, string, []string) {
	switch {
	case b.Min != nil && total < *b.Min:
		return 1, fmt.Sprintf("the refresh wrote %d rows, fewer than rows.min %d", total, *b.Min), nil
	case b.Max != nil && total > *b.Max:
		return 1, fmt.Sprintf("the refresh wrote %d rows, more than rows.max %d", total, *b.Max), nil
	}
	msg := fmt.Sprintf("the refresh wrote %d rows", total)
	if b.MaxChange == 0 {
		return 0, msg, nil
	}
	keys := make([]string, 0, len(n.Before))
	for k := range n.Before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bad []string
	for _, k := range keys {
		before := n.Before[k]
		after := int64(0)
		if row := n.Rows[k]; row != nil {
			after = row[0]
		}
		if before == 0 || math.Abs(float64(after-before))/float64(before) <= b.MaxChange+1e-12 {
			continue
		}
		where := "the window"
		if col != "" {
			where = col + "=" + k
		}
		bad = append(bad, fmt.Sprintf("%s: %d → %d rows (%+.0f%%)", where, before, after, 100*float64(after-before)/float64(before)))
	}
	if len(bad) == 0 {
		return 0, msg + ", no partition changed by more than " + b.MaxChangeText, nil
	}
	return int64(len(bad)), fmt.Sprintf("%d partitions changed by more than %s against what they held before the refresh", len(bad), b.MaxChangeText), bad[:min(len(bad), MaxSamples)]
}

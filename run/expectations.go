package run

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// expecting is what a refresh's expectation checks carry from before its
// write to after it: the rows the write replaces, per partition value
// (rows.max_change compares with them).
type expecting struct {
	before map[string]int64
}

// expectBefore counts, before the write, what rows.max_change compares
// with: in the refresh's snapshot, so the counts are those the write
// replaces.
func (rt *refreshTx) expectBefore(ctx context.Context) error {
	rt.ex = &expecting{}
	checks, err := rt.f.Checks(rt.stmts, rt.checkTime())
	if err != nil || checks.Before == "" {
		return err
	}
	rt.ex.before, err = keyCounts(ctx, rt.tx, checks.Before)
	return err
}

// expect checks the flow's expectations on the rows the refresh wrote,
// before anything else of it is stored and before it commits. A failure
// of severity error returns an *ExpectationsFailed, which rolls the
// refresh back; warnings are printed and committed with it.
func (rt *refreshTx) expect(ctx context.Context) error {
	if !rt.f.HasExpectations() {
		// Results of expectations the spec no longer has are not the
		// flow's any more (rwc status).
		return recordResults(ctx, rt.tx, rt.f.Name(), nil, "committed", rt.res.StartedAt)
	}
	checks, err := rt.f.Checks(rt.stmts, rt.checkTime())
	if err != nil || checks.Rows == "" {
		return err
	}
	results, err := runChecks(ctx, rt.tx, rt.f, checks, rt.ex.before)
	if err != nil {
		return err
	}
	rt.res.Expectations = results
	failed := failedOf(rt.f.Name(), results)
	if failed == nil {
		return recordResults(ctx, rt.tx, rt.f.Name(), results, "committed", rt.res.StartedAt)
	}
	return failed
}

// checkTime is the instant a check's current_date() reads: the refresh's.
func (rt *refreshTx) checkTime() predicate.Resolution {
	return predicate.Resolution{Now: rt.r.opts.Now(), Zone: rt.r.opts.Zone}
}

// ExpectationsFailed is a refresh rolled back because expectations of
// severity error failed on the rows it wrote.
type ExpectationsFailed struct {
	Flow    string
	Results []compile.ExpectationResult // all of the refresh's, passed ones too
}

func (e *ExpectationsFailed) Error() string {
	var m *multierror.Error
	failed := 0
	for _, r := range e.Results {
		if r.Failed() {
			failed++
		}
		if !r.Passed {
			m = multierror.Append(m, errors.New(describe(r)))
		}
	}
	m.ErrorFormat = func(es []error) string {
		lines := make([]string, len(es))
		for i, x := range es {
			lines[i] = x.Error()
		}
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("flow %s: %d expectation(s) failed; %s\n%s", e.Flow, failed, unchanged, m.Error())
}

// failedOf is the error for results with an error-severity failure, or nil.
func failedOf(flow string, results []compile.ExpectationResult) *ExpectationsFailed {
	for _, r := range results {
		if r.Failed() {
			return &ExpectationsFailed{Flow: flow, Results: results}
		}
	}
	return nil
}

// describe is one result as the output shows it: where the expectation
// is, what failed, and the samples.
func describe(r compile.ExpectationResult) string {
	s := fmt.Sprintf("%s: %s expectation %s (%s): %s", r.Pos, r.Severity, r.Name, r.Kind, diag.Visible(r.Message))
	for _, x := range r.Samples {
		s += "\n    " + diag.Visible(x) // the target's values: a control character shows as U+FFFD
	}
	return s
}

// logResults prints the warnings of a refresh once it committed: a
// refresh retried after a serialization failure, or whose commit failed,
// warns of nothing it did not keep.
func logResults(log interface{ Write([]byte) (int, error) }, flow string, results []compile.ExpectationResult) {
	for _, r := range results {
		if !r.Passed {
			fmt.Fprintf(log, "%s: %s\n", flow, describe(r))
		}
	}
}

// runChecks runs checks in tx and returns one result per expectation,
// with samples of those that failed.
func runChecks(ctx context.Context, tx *sql.Tx, f *compile.Flow, checks compile.Checks, before map[string]int64) ([]compile.ExpectationResult, error) {
	n := compile.CheckCounts{Before: before, Rows: map[string][]int64{}, Apart: map[int]int64{}}
	if err := rowCounts(ctx, tx, checks.Rows, checks.Counts(), n.Rows); err != nil {
		return nil, checkError(f, -1, err)
	}
	for _, q := range append(checks.Apart, checks.Repeated(n.Rows)...) {
		var v int64
		if err := tx.QueryRowContext(ctx, q.SQL).Scan(&v); err != nil {
			return nil, checkError(f, q.For, err)
		}
		n.Apart[q.For] = v
	}
	results := f.Evaluate(checks, n)
	for i := range results {
		if results[i].Passed || checks.Samples[i] == "" {
			continue
		}
		s, err := samples(ctx, tx, checks.Samples[i], sampleNames(f, f.Expectations[i]))
		if err != nil {
			return nil, checkError(f, i, err)
		}
		results[i].Samples = s
	}
	return results, nil
}

// checkError says which expectation's query the server refused (a
// relationship to a table that does not exist, or of another type).
func checkError(f *compile.Flow, i int, err error) error {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err
	}
	if i < 0 {
		return fmt.Errorf("flow %s: checking its expectations failed: %s; %s", f.Name(), serverWords(err), unchanged)
	}
	e := f.Expectations[i]
	return fmt.Errorf("%s: flow %s: expectation %s cannot be checked: %s; %s", e.Pos, f.Name(), e.Name, serverWords(err), unchanged)
}

// keyCounts reads (partition value, count) rows.
func keyCounts(ctx context.Context, tx *sql.Tx, q string) (map[string]int64, error) {
	out := map[string]int64{}
	rows := map[string][]int64{}
	if err := rowCounts(ctx, tx, q, 1, rows); err != nil {
		return nil, err
	}
	for k, v := range rows {
		out[k] = v[0]
	}
	return out, nil
}

// rowCounts reads rows of a partition value and n counts into into.
func rowCounts(ctx context.Context, tx *sql.Tx, q string, n int, into map[string][]int64) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key sql.NullString
		vals := make([]int64, n)
		dest := []any{&key}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		into[key.String] = vals
	}
	return rows.Err()
}

// samples reads a sample query's rows as text: whole rows (col=value, …)
// for check and not_null, keys with their row counts for unique and
// relationships.
func samples(ctx context.Context, tx *sql.Tx, q string, names []string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if len(names) != len(cols) {
		return nil, fmt.Errorf("internal: a sample of %d columns, %d names", len(cols), len(names))
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, sampleText(names, vals))
	}
	return out, rows.Err()
}

// sampleNames names a sample query's columns (compile.Checks.Samples):
// the table's, or the key's and "rows".
func sampleNames(f *compile.Flow, e *compile.Expectation) []string {
	switch e.Kind {
	case spec.ExpectUnique:
		return append(append([]string{}, e.Columns.Columns...), "rows")
	case spec.ExpectRelationships:
		return []string{e.Rel.Column, "rows"}
	}
	names := make([]string, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		names[i] = c.Name
	}
	return names
}

func sampleText(names []string, vals []sql.NullString) string {
	parts := make([]string, 0, len(vals))
	for i, v := range vals {
		s := "NULL"
		if v.Valid {
			s = shortValue(v.String)
		}
		parts = append(parts, names[i]+"="+s)
	}
	return strings.Join(parts, ", ")
}

// recordResults keeps each expectation's last result, for rwc status,
// and forgets those of expectations the flow no longer has: in the
// refresh's transaction when it commits, on its own when it rolled back
// (outcome says which). One statement, whatever the count: a refresh
// holds its locks meanwhile.
func recordResults(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, flow string, results []compile.ExpectationResult, outcome string, at time.Time) error {
	// The rows as rwc status reads them back (Outcome and CheckedAt are
	// the statement's own parameters).
	rows := make([]RecordedResult, len(results))
	names := make([]string, len(results))
	for i, r := range results {
		names[i] = r.Name
		rows[i] = RecordedResult{Name: r.Name, Kind: r.Kind, Severity: r.Severity, At: r.Pos.String(), Passed: r.Passed,
			Failing: r.Failing, Checked: r.Checked, Message: r.Message, Samples: r.Samples}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `WITH gone AS (DELETE FROM rwc.expectation_results WHERE flow = $1 AND NOT (name = ANY($2)))
		INSERT INTO rwc.expectation_results
			(flow, name, kind, severity, at, passed, failing, checked_rows, message, samples, outcome, checked_at)
		SELECT $1, r.name, r.kind, r.severity, r.at, r.passed, r.failing, r.checked_rows, r.message,
			ARRAY(SELECT jsonb_array_elements_text(r.samples)), $4, $5
		FROM jsonb_to_recordset($3::jsonb) AS r(name text, kind text, severity text, at text, passed boolean,
			failing bigint, checked_rows bigint, message text, samples jsonb)
		ON CONFLICT (flow, name) DO UPDATE SET kind = EXCLUDED.kind, severity = EXCLUDED.severity, at = EXCLUDED.at,
			passed = EXCLUDED.passed, failing = EXCLUDED.failing, checked_rows = EXCLUDED.checked_rows,
			message = EXCLUDED.message, samples = EXCLUDED.samples, outcome = EXCLUDED.outcome, checked_at = EXCLUDED.checked_at`,
		flow, pq.Array(names), string(doc), outcome, at)
	return err
}

// Tested is one flow's expectations checked on its target as it is (rwc
// test).
type Tested struct {
	Flow    string                      `json:"flow"`
	Where   string                      `json:"where,omitempty"` // the rows checked, CEL ("": all)
	Results []compile.ExpectationResult `json:"results"`
	// Recorded: the results are kept for rwc status (false: the role may
	// not write rwc's state; the results were printed only).
	Recorded bool `json:"recorded"`
}

// TestExpectations checks f's expectations on its target's rows where
// holds (nil: all), in a read-only transaction that changes nothing, then
// keeps the results for rwc status.
func TestExpectations(ctx context.Context, db *sql.DB, f *compile.Flow, where *predicate.Predicate, opts Options) (Tested, error) {
	out := Tested{Flow: f.Name(), Results: []compile.ExpectationResult{}}
	if where != nil {
		out.Where = where.Root.CEL()
	}
	if f.Predicate == nil {
		return out, refuse("flow %s has lint errors; run rwc lint", f.Name())
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	checks, err := f.TestChecks(where, predicate.Resolution{Now: now, Zone: opts.Zone})
	if err != nil || checks.Rows == "" {
		return out, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return out, err
	}
	defer tx.Rollback()
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, f.Target()).Scan(&exists); err != nil {
		return out, err
	}
	if !exists {
		return out, refuse("flow %s has no target %s yet: rwc apply creates it", f.Name(), f.Target())
	}
	if opts.StatementTimeout > 0 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", opts.StatementTimeout.Milliseconds())); err != nil {
			return out, err
		}
	}
	if out.Results, err = runChecks(ctx, tx, f, checks, nil); err != nil {
		return out, err
	}
	if err := tx.Rollback(); err != nil {
		return out, err
	}
	out.Recorded = recordResults(ctx, db, f.Name(), out.Results, "tested", now.UTC()) == nil
	return out, nil
}

// LastResults are the last recorded result of each expectation, by flow.
func LastResults(ctx context.Context, db *sql.DB) (map[string][]RecordedResult, error) {
	rows, err := db.QueryContext(ctx, `SELECT flow, name, kind, severity, at, passed, failing, checked_rows, message, samples, outcome, checked_at
		FROM rwc.expectation_results ORDER BY flow, name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]RecordedResult{}
	for rows.Next() {
		var r RecordedResult
		var flow, at string
		if err := rows.Scan(&flow, &r.Name, &r.Kind, &r.Severity, &at, &r.Passed, &r.Failing, &r.Checked, &r.Message,
			pq.Array(&r.Samples), &r.Outcome, &r.CheckedAt); err != nil {
			return nil, err
		}
		r.At = at
		r.CheckedAt = r.CheckedAt.UTC()
		out[flow] = append(out[flow], r)
	}
	return out, rows.Err()
}

// RecordedResult is an expectation's last result as the state keeps it:
// where it was declared then (At, file:line:col), and what the refresh
// did with it (committed, rolled_back, or tested by rwc test).
type RecordedResult struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Severity  string    `json:"severity"`
	At        string    `json:"at"`
	Passed    bool      `json:"passed"`
	Failing   int64     `json:"failing"`
	Checked   int64     `json:"checked_rows"`
	Message   string    `json:"message"`
	Samples   []string  `json:"samples,omitempty"`
	Outcome   string    `json:"outcome"`
	CheckedAt time.Time `json:"checked_at"`
}

// eventError is a failed refresh's error as its event keeps it: the
// expectations' failures are the event's expectations already, so only
// the first line of theirs.
func eventError(err error) string {
	var ef *ExpectationsFailed
	if errors.As(err, &ef) {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return first
	}
	return err.Error()
}

// shortValue marks a value the sample query cut (compile.MaxSampleValue).
func shortValue(s string) string {
	if r := []rune(s); len(r) > compile.MaxSampleValue {
		return string(r[:compile.MaxSampleValue]) + "…"
	}
	return s
}

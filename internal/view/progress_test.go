package view

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
)

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// On a terminal, each redraw of a backfill's bar fits the terminal's width,
// however long the file's name (a line that wraps cannot be redrawn in
// place and leaves stale lines), and shows rows, rows/s and the remaining
// time; it clears the line it redraws. Elsewhere, a plain line per batch.
func TestBatchReporterFitsTerminal(t *testing.T) {
	job := &run.BackfillJob{Path: "pipelines/backfills/2026-01-10-recompute-the-whole-of-the-fourth-quarter-after-the-currency-bug.yaml",
		Flow: &compile.Flow{Table: &spec.Table{Name: "orders_enriched_by_region_and_product"}}}
	for _, width := range []int{60, 80, 100, 260} {
		var b bytes.Buffer
		rep := NewBatchReporter(&b, width)
		for i := 1; i <= 4; i++ {
			rep.Report(run.BatchProgress{Job: job, Batch: i, Total: 4, Result: run.Result{Outcome: run.Outcome{RowsInserted: 1000}, Duration: 500 * time.Millisecond}})
		}
		out := b.String()
		if !strings.Contains(out, "\x1b[0K") {
			t.Errorf("width %d: the redraw does not clear the rest of the line: %q", width, out)
		}
		for _, seg := range strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' }) {
			line := ansi.ReplaceAllString(seg, "")
			if n := len([]rune(line)); n >= width {
				t.Errorf("width %d: a line of %d columns: %q", width, n, line)
			}
		}
		if !strings.Contains(out, "4000 rows, 2000 rows/s") || !strings.Contains(out, "(4/4)") {
			t.Errorf("width %d: no rows, rows/s or count: %q", width, out)
		}
		if width >= 260 && !strings.Contains(out, job.Path) {
			t.Errorf("width %d: the label is cut though it fits: %q", width, out)
		}
		if width < 260 && !strings.Contains(out, "…") {
			t.Errorf("width %d: the label is not cut: %q", width, out)
		}
	}
	// Mid-way, the bar shows the time left.
	var b bytes.Buffer
	rep := NewBatchReporter(&b, 100)
	rep.Report(run.BatchProgress{Job: job, Batch: 1, Total: 4, Result: run.Result{Outcome: run.Outcome{RowsInserted: 10}, Duration: time.Second}})
	if !regexp.MustCompile(`\[\d+s:\d+s\]`).MatchString(b.String()) {
		t.Errorf("no elapsed:remaining time: %q", b.String())
	}

	var plain bytes.Buffer
	NewBatchReporter(&plain, 0).Report(run.BatchProgress{Job: job, Batch: 1, Total: 2, Result: run.Result{Outcome: run.Outcome{RowsDeleted: 1, RowsInserted: 2}, Duration: time.Second}})
	if want := "backfill " + job.Path + " (orders_enriched_by_region_and_product): batch 1/2: 1 deleted, 2 inserted in 1s\n"; plain.String() != want {
		t.Errorf("not a terminal: %q, want %q", plain.String(), want)
	}
}

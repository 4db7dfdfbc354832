package view

import (
	"fmt"
	"io"
	"path"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rwc-dev/rwc/run"
)

// BatchReporter shows backfill progress: a bar per backfill on a terminal
// (batches done, rows, rows per second, elapsed and remaining time), fitted
// to the terminal's width so that a long label never wraps (a wrapped line
// cannot be redrawn and leaves stale lines), and one plain line per batch
// elsewhere (CI logs).
type BatchReporter struct {
	w     io.Writer
	width int // the terminal's columns; 0: not a terminal
	bars  map[string]*progressbar.ProgressBar
	rows  map[string]int64
	spent map[string]time.Duration // the batches' time, for rows/s
}

// NewBatchReporter reports to w, with bars when w is a terminal width
// columns wide (0: not a terminal, plain lines).
func NewBatchReporter(w io.Writer, width int) *BatchReporter {
	return &BatchReporter{w: w, width: width, bars: map[string]*progressbar.ProgressBar{}, rows: map[string]int64{},
		spent: map[string]time.Duration{}}
}

// barStats is the room the bar's own text takes besides the bar and the
// description, for total batches: " 100% |", "| (total/total)", the times
// ("[1m30s:10m0s]") and a column to spare (a line filling the last column
// wraps on some terminals). Should the times grow longer, the library
// shrinks the bar to fit the terminal.
func barStats(total int) int {
	return len(" 100% |") + len(fmt.Sprintf("| (%d/%d) ", total, total)) + len("[10m0s:10m0s]") + 1
}

// Report shows one committed batch.
func (b *BatchReporter) Report(p run.BatchProgress) {
	b.rows[p.Job.Path] += p.Result.RowsInserted
	b.spent[p.Job.Path] += p.Result.Duration
	if b.width <= 0 {
		fmt.Fprintf(b.w, "%s: batch %d/%d: %d deleted, %d inserted in %s\n", JobLabel(p.Job),
			p.Batch, p.Total, p.Result.RowsDeleted, p.Result.RowsInserted, p.Result.Duration.Round(time.Millisecond))
		return
	}
	desc := b.describe(p)
	bar, ok := b.bars[p.Job.Path]
	if !ok {
		bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(b.w), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(b.barWidth(desc, p.Total)),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionUseANSICodes(true),
			progressbar.OptionSetDescription(desc))
		b.bars[p.Job.Path] = bar
		_ = bar.Set(p.Batch - 1)
	}
	bar.Describe(desc)
	_ = bar.Set(p.Batch)
	if p.Batch == p.Total {
		_ = bar.Finish()
		fmt.Fprintln(b.w)
	}
}

// describe is the bar's description: the job, its rows and rows per
// second, the job's label cut (with …) to leave the bar room on the line.
func (b *BatchReporter) describe(p run.BatchProgress) string {
	rows := b.rows[p.Job.Path]
	rate := ""
	if spent := b.spent[p.Job.Path].Seconds(); spent > 0 {
		rate = fmt.Sprintf(", %.0f rows/s", float64(rows)/spent)
	}
	tail := fmt.Sprintf(": %d rows%s", rows, rate)
	room := b.width - barStats(p.Total) - minBar - len([]rune(tail))
	label := JobLabel(p.Job)
	if len([]rune(label)) > room && p.Job.Path != WhereJob {
		// The file's name says more than its directory.
		label = "backfill " + path.Base(p.Job.Path) + " (" + p.Job.Flow.Name() + ")"
	}
	return cut(label, room) + tail
}

// cut shortens s to n columns, replacing its middle with "…".
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 2 {
		return "…"
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// minBar and maxBar bound the bar's own width.
const minBar, maxBar = 6, 30

func (b *BatchReporter) barWidth(desc string, total int) int {
	return max(minBar, min(maxBar, b.width-barStats(total)-len([]rune(desc))))
}

// WhereJob is the job name of rwc refresh --where --batch, which has no
// backfill file.
const WhereJob = "--where"

// JobLabel names a batched job as the user started it.
func JobLabel(j *run.BackfillJob) string {
	if j.Path == WhereJob {
		return "refresh " + j.Flow.Name() + " --where"
	}
	return "backfill " + j.Path + " (" + j.Flow.Name() + ")"
}

// Result renders one refresh's result on a line.
func Result(w io.Writer, r run.Result) {
	reasons := reasonsText(r.Reasons)
	if r.Err != nil {
		fmt.Fprintf(w, "%-24s %s%s FAILED: %v\n", r.Flow, r.Action, reasons, r.Err)
		return
	}
	fmt.Fprintf(w, "%-24s %s%s: %d deleted, %d inserted in %s\n", r.Flow, r.Action, reasons,
		r.RowsDeleted, r.RowsInserted, r.Duration.Round(time.Millisecond))
}

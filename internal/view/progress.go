package view

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rwc-dev/rwc/run"
)

// BatchReporter shows backfill progress: a bar per backfill on a terminal
// (batches done, rows, ETA), one plain line per batch elsewhere (CI logs).
type BatchReporter struct {
	w    io.Writer
	tty  bool
	bars map[string]*progressbar.ProgressBar
	rows map[string]int64
}

// NewBatchReporter reports to w, with bars when tty.
func NewBatchReporter(w io.Writer, tty bool) *BatchReporter {
	return &BatchReporter{w: w, tty: tty, bars: map[string]*progressbar.ProgressBar{}, rows: map[string]int64{}}
}

// Report shows one committed batch.
func (b *BatchReporter) Report(p run.BatchProgress) {
	b.rows[p.Job.Path] += p.Result.RowsInserted
	if !b.tty {
		fmt.Fprintf(b.w, "%s: batch %d/%d: %d deleted, %d inserted in %s\n", JobLabel(p.Job),
			p.Batch, p.Total, p.Result.RowsDeleted, p.Result.RowsInserted, p.Result.Duration.Round(time.Millisecond))
		return
	}
	bar, ok := b.bars[p.Job.Path]
	if !ok {
		bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(b.w), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish())
		b.bars[p.Job.Path] = bar
		_ = bar.Set(p.Batch - 1)
	}
	bar.Describe(fmt.Sprintf("%s: %d rows", JobLabel(p.Job), b.rows[p.Job.Path]))
	_ = bar.Set(p.Batch)
	if p.Batch == p.Total {
		_ = bar.Finish()
		fmt.Fprintln(b.w)
	}
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

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rwc-dev/rwc/run"
)

// batchReporter shows backfill progress: a bar per backfill on a terminal
// (batches done, rows, ETA), one plain line per batch elsewhere (CI logs).
type batchReporter struct {
	w    io.Writer
	tty  bool
	bars map[string]*progressbar.ProgressBar
	rows map[string]int64
}

func newBatchReporter(w io.Writer) *batchReporter {
	return &batchReporter{w: w, tty: isTerminal(w), bars: map[string]*progressbar.ProgressBar{}, rows: map[string]int64{}}
}

func (b *batchReporter) report(p run.BatchProgress) {
	b.rows[p.Job.Path] += p.Result.RowsInserted
	if !b.tty {
		fmt.Fprintf(b.w, "%s: batch %d/%d: %d deleted, %d inserted in %s\n", jobLabel(p.Job),
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
	bar.Describe(fmt.Sprintf("%s: %d rows", jobLabel(p.Job), b.rows[p.Job.Path]))
	_ = bar.Set(p.Batch)
	if p.Batch == p.Total {
		_ = bar.Finish()
		fmt.Fprintln(b.w)
	}
}

// whereJob is the job name of rwc refresh --where --batch-size, which has no
// backfill file.
const whereJob = "--where"

// jobLabel names a batched job as the user started it.
func jobLabel(j *run.BackfillJob) string {
	if j.Path == whereJob {
		return "refresh " + j.Flow.Name() + " --where"
	}
	return "backfill " + j.Path + " (" + j.Flow.Name() + ")"
}

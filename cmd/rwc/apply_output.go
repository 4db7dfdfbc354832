package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
)

// applyOutput is what rwc apply writes: each refresh as it ends (text), or
// the whole report when the apply ends (json, markdown), which it writes
// on failure too.
type applyOutput struct {
	format string
	out    io.Writer
	stderr io.Writer
	bars   *view.BatchReporter
	report run.ApplyReport
	start  time.Time
}

func newApplyOutput(cmd *cobra.Command, format, commit string, dirty bool) *applyOutput {
	out := cmd.OutOrStdout()
	start := time.Now()
	return &applyOutput{format: format, out: out, stderr: cmd.ErrOrStderr(), bars: view.NewBatchReporter(out, terminalWidth(out)),
		report: run.ApplyReport{Commit: commit, Dirty: dirty, StartedAt: start.UTC(), Flows: []run.FlowReport{}}, start: start}
}

func (a *applyOutput) refreshed(r run.Result) {
	a.report.Add(r)
	if a.format == "text" {
		view.Result(a.out, r)
	}
}

func (a *applyOutput) batch(b run.BatchProgress) {
	a.report.Add(b.Result)
	if a.format == "text" {
		a.bars.Report(b)
	}
}

// removed drops or keeps the targets of the flows the specs no longer
// define, and says which.
func (a *applyOutput) removed(cmd *cobra.Command, runner *run.Runner, removed []run.Removed, drop bool) error {
	for _, rm := range removed {
		rr := run.RemovedReport{Flow: rm.Flow, Target: rm.Target}
		if !drop || rm.Protected {
			rr.KeptBecause = rm.KeptBecause(drop)
		} else if err := runner.DropRemoved(cmd.Context(), rm); err != nil {
			return fmt.Errorf("dropping removed flow %s: %w", rm.Flow, err)
		} else {
			rr.Dropped = true
		}
		a.report.Removed = append(a.report.Removed, rr)
		if a.format != "text" {
			continue
		}
		if rr.Dropped {
			fmt.Fprintf(a.out, "%-24s removed from the specs: dropped %s\n", rm.Flow, rm.Target)
		} else {
			fmt.Fprintf(a.out, "%-24s removed from the specs: its target %s is kept (%s)\n", rm.Flow, rm.Target, rr.KeptBecause)
		}
	}
	return nil
}

// done writes the end of the apply of flows of all (selected: by
// --select, which records no deployment): the report (json, markdown), the
// last line (text), the error on stderr; and gives the exit status.
func (a *applyOutput) done(flows, all int, selected []string, err error) error {
	a.report.Deployed = err == nil && selected == nil
	a.report.Select = selected
	a.report.Duration = run.Millis(time.Since(a.start))
	if err != nil {
		a.report.Error = err.Error()
		fmt.Fprintf(a.stderr, "rwc: %v\n", err)
	}
	switch a.format {
	case "json":
		if werr := writeJSON(a.out, a.report); werr != nil {
			return werr
		}
	case "markdown":
		view.ApplyMarkdown(a.out, a.report)
	default:
		if err == nil {
			view.ApplyText(a.out, a.report, flows, all)
		}
	}
	if err != nil {
		return exitError{1}
	}
	return nil
}

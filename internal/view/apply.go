package view

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

// ApplyMarkdown renders what rwc apply did as a summary for a CI run
// ($GITHUB_STEP_SUMMARY): the outcome first, then one row per refresh and
// backfill batch, the removed flows, and the error when it failed.
func ApplyMarkdown(w io.Writer, a run.ApplyReport) {
	var b strings.Builder
	outcome := "applied, deployment recorded"
	if !a.Deployed {
		outcome = "**failed**: the deployment was not recorded"
	}
	fmt.Fprintf(&b, "### rwc apply %s\n\n%s; %s\n\n", applyWhere(a, func(s string) string { return "`" + s + "`" }), outcome, applyCounts(a.Summary, time.Duration(a.Duration)))
	if a.Error != "" {
		fmt.Fprintf(&b, "> %s\n\n", mdText(a.Error))
	}
	if len(a.Flows) > 0 {
		b.WriteString("| flow | action | reasons | deleted | inserted | time |\n| --- | --- | --- | ---: | ---: | ---: |\n")
		for _, f := range a.Flows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %s |\n", f.Flow, applyAction(f), mdList(compile.Words(f.Reasons)), f.RowsDeleted, f.RowsInserted, time.Duration(f.Duration).Round(time.Millisecond))
		}
	}
	for _, rm := range a.Removed {
		what := "dropped"
		if !rm.Dropped {
			what = "kept: " + mdText(rm.KeptBecause)
		}
		fmt.Fprintf(&b, "\n- `%s` was removed from the specs; its target %s is %s", rm.Flow, mdCode(rm.Target), what)
	}
	if len(a.Removed) > 0 {
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

// ApplyText is the last line of a successful rwc apply of flows of all
// (fewer with --select, which records no deployment).
func ApplyText(w io.Writer, a run.ApplyReport, flows, all int) {
	where := applyWhere(a, func(s string) string { return s })
	if a.Select != nil {
		fmt.Fprintf(w, "applied %d of %s %s (--select %s); the deployment is not recorded: an apply of every flow records it\n",
			flows, diag.Plural(all, "flow"), where, strings.Join(a.Select, " "))
		return
	}
	fmt.Fprintf(w, "applied %s %s\n", diag.Plural(flows, "flow"), where)
}

// applyWhere is what an apply deployed, its commit written by code.
func applyWhere(a run.ApplyReport, code func(string) string) string {
	switch {
	case a.Commit == "":
		return "(not a git work tree)"
	case a.Dirty:
		return "at " + code(short(a.Commit)) + " with uncommitted changes"
	}
	return "at " + code(short(a.Commit))
}

func applyCounts(s run.ApplySummary, took time.Duration) string {
	parts := []string{diag.Plural(s.Refreshed, "flow") + " refreshed"}
	if s.Batches > 0 {
		parts = append(parts, fmt.Sprintf("%d backfill batches", s.Batches))
	}
	if s.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", s.Failed))
	}
	if s.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", s.Skipped))
	}
	return fmt.Sprintf("%s; %d rows deleted, %d inserted, in %s", strings.Join(parts, ", "), s.RowsDeleted, s.RowsInserted, took.Round(time.Millisecond))
}

// applyAction is a row's action, with the backfill batch it ran for and
// the error it failed with.
func applyAction(f run.FlowReport) string {
	action := string(f.Action)
	if bf := f.Backfill; bf != nil {
		action += fmt.Sprintf(" %s %d/%d", mdCode(bf.File), bf.Batch, bf.Of)
	}
	if f.Error != "" {
		action += " **FAILED**: " + mdText(f.Error)
	}
	return action
}

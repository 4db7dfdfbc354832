package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

// Status renders rwc status for a terminal: the deployment, each flow's
// last refresh, change capture and coverage, and the backfill ledger.
func Status(w io.Writer, st run.Status) error {
	switch {
	case st.DeployedAt == nil:
		fmt.Fprintln(w, "deployed: nothing yet (run rwc apply)")
	default:
		commit := st.Commit
		if commit == "" {
			commit = "(no git commit)"
		}
		if st.Dirty {
			commit += " + uncommitted changes"
		}
		fmt.Fprintf(w, "deployed: %s by %s at %s\n", commit, st.DeployedBy, st.DeployedAt.Format(time.RFC3339))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tTARGET\tLAST REFRESH\tLAST ACTION\tWINDOW")
	for _, f := range st.Flows {
		last := "never"
		if f.LastRefreshAt != nil {
			last = f.LastRefreshAt.Format(time.RFC3339)
		}
		action := f.LastAction
		if len(f.LastReasons) > 0 {
			action += " (" + strings.Join(f.LastReasons, ", ") + ")"
		}
		if f.LastError != "" {
			action = "FAILED: " + firstLine(f.LastError)
		}
		// A backfill, an override or a failure after the window's
		// refresh: say when, lest it read as the refresh's (the
		// refresh's own event has its start as its instant).
		if at := f.LastActionAt; at != nil && (f.LastRefreshAt == nil || !at.Equal(*f.LastRefreshAt)) {
			action += " at " + at.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Flow, f.Target, last, diag.Visible(action), diag.Visible(f.PredicateCEL))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeCapture(w, st.Flows)
	for _, f := range st.Flows {
		writeCoverage(w, f)
	}
	writeExpectations(w, st.Flows)
	writeLedger(w, st.Backfills)
	return nil
}

// writeCapture prints, per flow, what the next refresh will compare with
// to find what changed, and the target's dead rows.
func writeCapture(w io.Writer, flows []run.FlowStatus) {
	if len(flows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nchange capture (fingerprints taken at each refresh; with capture: triggers, not of a table whose triggers vouch that it did not change, and of a source only in the partitions its triggers logged):")
	for _, f := range flows {
		c := f.Capture
		what := "no fingerprints: its next refresh recomputes the window"
		switch {
		case !c.Fingerprinted:
		case c.Rewritten >= 0 && c.RewrittenPartitions == 0:
			what = fmt.Sprintf("%s fingerprinted; the target's window was rewritten whole (%s, known by their transaction)",
				diag.Plural(c.Sources, "source"), diag.Plural(int(c.Rewritten), "row"))
		case c.Rewritten >= 0:
			what = fmt.Sprintf("%s and %s of the target's window fingerprinted, %d of them rewritten (%s, known by their transaction)",
				diag.Plural(c.Sources, "source"), diag.Plural(c.Partitions, "partition"), c.RewrittenPartitions, diag.Plural(int(c.Rewritten), "row"))
		default:
			what = fmt.Sprintf("%s and %s of the target's window fingerprinted", diag.Plural(c.Sources, "source"), diag.Plural(c.Partitions, "partition"))
		}
		fmt.Fprintf(w, "  %s: %s; %s since the last VACUUM, %s\n", f.Flow, what, diag.Plural(int(c.DeadRows), "dead row"), vacuumedBy(c.Vacuum))
		for _, t := range c.Tables {
			fmt.Fprintf(w, "    trigger on %s: %s\n", t.Relation, vouches(t))
		}
		for _, m := range c.Maintained {
			fmt.Fprintf(w, "    maintain: immediate, on %s: %s\n", m.Source, maintainedText(m))
		}
	}
}

// maintainedText says whether a source's maintenance keeps the target.
func maintainedText(m run.MaintainedSource) string {
	if m.Installed && m.Triggers == len(compile.MaintainTriggers) {
		return "its triggers keep the target inside each writer's transaction (" + m.Function + ")"
	}
	return fmt.Sprintf("not kept: %d of %d triggers there and enabled, function %s; the next refresh finds what its writes changed and installs them again",
		m.Triggers, len(compile.MaintainTriggers), map[bool]string{true: "installed", false: "missing"}[m.Installed])
}

// vacuumedBy says who vacuums a target, and when.
func vacuumedBy(v run.Vacuum) string {
	if v.Threshold > 0 {
		return fmt.Sprintf("which %s runs at %d (%s)", v.By, v.Threshold, v.Why)
	}
	return fmt.Sprintf("which %s runs (%s)", v.By, v.Why)
}

// vouches says whether a table's trigger vouches for it, or why not.
func vouches(t run.TableCapture) string {
	if t.Why != "" {
		return "probed: " + t.Why
	}
	what := "vouches"
	if t.LogsValues {
		what += " and logs which partitions change"
	}
	if t.Changed {
		return what + "; changed since the last refresh"
	}
	return what + "; unchanged since the last refresh"
}

// writeCoverage prints, per flow, which partition ranges each column has
// been computed for, grouping columns with the same ranges.
func writeCoverage(w io.Writer, f run.FlowStatus) {
	if len(f.Coverage) == 0 {
		return
	}
	var order []string
	byRange := map[string][]string{}
	for _, c := range f.Coverage {
		if _, ok := byRange[c.Ranges]; !ok {
			order = append(order, c.Ranges)
		}
		byRange[c.Ranges] = append(byRange[c.Ranges], c.Column)
	}
	fmt.Fprintf(w, "\n%s columns filled for:\n", f.Flow)
	for _, r := range order {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(byRange[r], ", "), r)
	}
}

// EventsWidth is the width rwc events fits its lines to when its output
// is not a terminal.
const EventsWidth = 100

// Events renders the refresh log for a terminal width columns wide (0:
// EventsWidth): one line per event (when, flow, action, rows, duration),
// then, indented and wrapped to the width, its reasons, the window it
// replaced, the backfill it ran for and its error.
func Events(w io.Writer, evs []run.Event, width int) error {
	if width <= 0 {
		width = EventsWidth
	}
	type line struct{ started, flow, action, deleted, inserted, ms string }
	lines := []line{{"STARTED", "FLOW", "ACTION", "DELETED", "INSERTED", "MS"}}
	for _, e := range evs {
		action := string(e.Action)
		if e.Error != "" {
			action += " FAILED"
		}
		lines = append(lines, line{e.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), e.Flow, action,
			fmt.Sprint(e.RowsDeleted), fmt.Sprint(e.RowsInserted), fmt.Sprint(e.DurationMS)})
	}
	var wf, wa, wd, wi, wm int
	for _, l := range lines {
		wf, wa = max(wf, len(l.flow)), max(wa, len(l.action))
		wd, wi, wm = max(wd, len(l.deleted)), max(wi, len(l.inserted)), max(wm, len(l.ms))
	}
	for i, l := range lines {
		fmt.Fprintf(w, "%-20s  %-*s  %-*s  %*s  %*s  %*s\n", l.started, wf, l.flow, wa, l.action, wd, l.deleted, wi, l.inserted, wm, l.ms)
		if i == 0 {
			continue
		}
		e := evs[i-1]
		if len(e.Reasons) > 0 {
			writeWrapped(w, "  reasons: ", strings.Join(compile.Words(e.Reasons), ", "), width)
		}
		if e.PredicateCEL != "" {
			writeWrapped(w, "  window: ", diag.Visible(e.PredicateCEL), width)
		}
		if b := e.Backfill; b != nil {
			writeWrapped(w, "  backfill: ", diag.Visible(fmt.Sprintf("%s %d/%d: %s", b.File, b.Batch, b.Of, strings.Join(strings.Fields(b.Reason), " "))), width)
		}
		for _, x := range e.Expectations {
			writeWrapped(w, "  expect: ", diag.Visible(resultLine(x)), width)
		}
		if e.Error != "" {
			writeWrapped(w, "  error: ", diag.Visible(strings.Join(strings.Fields(e.Error), " ")), width)
		}
	}
	return nil
}

// writeWrapped writes prefix and text, wrapped at spaces to lines of at
// most width columns (a word longer than a line is not cut), each line
// after the first indented by as much as prefix.
func writeWrapped(w io.Writer, prefix, text string, width int) {
	indent := strings.Repeat(" ", len(prefix))
	line, n := prefix, len(prefix)
	empty := true
	for _, word := range strings.Fields(text) {
		wn := utf8.RuneCountInString(word)
		if !empty && n+1+wn > width {
			fmt.Fprintln(w, line)
			line, n, empty = indent, len(indent), true
		}
		if !empty {
			line += " "
			n++
		}
		line += word
		n += wn
		empty = false
	}
	fmt.Fprintln(w, line)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// writeLedger prints the backfill ledger.
func writeLedger(w io.Writer, entries []run.LedgerEntry) {
	if len(entries) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbackfills:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FILE\tFLOW\tBATCHES\tDELETED\tINSERTED\tFINISHED\tREASON")
	for _, e := range entries {
		fin := "not yet (rwc apply resumes it)"
		if e.FinishedAt != nil {
			fin = e.FinishedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%d\t%d\t%s\t%s\n", diag.Visible(e.Path), e.Flow, e.BatchesDone, e.Batches, e.RowsDeleted, e.RowsInserted, fin, diag.Visible(e.Reason))
	}
	tw.Flush()
}

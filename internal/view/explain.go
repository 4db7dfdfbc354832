package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

// Explained prints what rwc refresh --explain decided for a flow: the
// decision in comments, then the statements the refresh would send.
func Explained(w io.Writer, flow string, ex run.Explained) {
	d := ex.Decision
	fmt.Fprintf(w, "-- flow %s: window %s\n", flow, diag.Visible(ex.Window))
	if ex.Assumed {
		fmt.Fprintf(w, "-- %s\n", compile.NoDatabaseAssumption)
	}
	fmt.Fprintf(w, "-- action: %s%s\n", d.Action, reasonsText(d.Reasons))
	if ex.Refused != "" {
		fmt.Fprintf(w, "-- the refresh refuses it, changing nothing: %s\n\n", diag.Visible(ex.Refused))
		return
	}
	switch {
	case d.Unchanged:
		fmt.Fprintf(w, "-- no source row changed in the window since the last refresh, and the target is as it left it: nothing is written\n")
	case len(d.Partitions) > 0:
		fmt.Fprintf(w, "-- partitions whose source rows changed: %s\n", diag.Visible(strings.Join(d.Partitions, ", ")))
	}
	for _, n := range ex.Notes {
		fmt.Fprintf(w, "-- %s\n", diag.Visible(n))
	}
	for _, n := range ex.Observed.AfterQueryNotes() {
		fmt.Fprintf(w, "-- %s\n", diag.Visible(n))
	}
	if s := ex.Writes[0]; len(s.PushedTo) > 0 {
		fmt.Fprintf(w, "-- predicate pushed to: %v\n", s.PushedTo)
	}
	for _, c := range ex.Indexes {
		for _, st := range c.SQL {
			fmt.Fprintf(w, "-- %s, before the refresh, outside its transaction:\n%s;\n", diag.Visible(c.String()), diag.VisibleLines(st))
		}
	}
	if first := ex.Writes[0].PartitionsFirst; len(first) > 0 {
		fmt.Fprintf(w, "-- the partitions the refresh needs, committed before it (the target has a DEFAULT partition):\nBEGIN;\n")
		for _, st := range first {
			fmt.Fprintf(w, "%s;\n", diag.VisibleLines(st))
		}
		fmt.Fprintf(w, "COMMIT;\n")
	}
	fmt.Fprintf(w, "BEGIN;\n")
	if ex.Checks.Before != "" {
		fmt.Fprintf(w, "-- expectations: the rows the write replaces, per partition (rows.max_change compares with them)\n%s;\n", diag.VisibleLines(ex.Checks.Before))
	}
	for i, s := range ex.Writes {
		if i > 0 {
			fmt.Fprintf(w, "-- the target was changed outside rwc within the window: the whole window, on top\n")
		}
		list := s.List()
		if i == len(ex.Writes)-1 && len(ex.Checks.After()) > 0 {
			list = ex.Checks.Within(s)
		}
		for _, st := range list {
			fmt.Fprintf(w, "%s;\n", diag.VisibleLines(st)) // a control character of a spec's shows as U+FFFD
		}
	}
	fmt.Fprintf(w, "COMMIT;\n\n")
}

// reasonsText is the reasons of a decision after its action, in
// parentheses; nothing when there are none.
func reasonsText(rs []compile.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	return " (" + strings.Join(compile.Words(rs), ", ") + ")"
}

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

// resultLine is one expectation's result in one line, as the event log
// shows it: name, verdict, what failed.
func resultLine(x compile.ExpectationResult) string {
	return fmt.Sprintf("%s %s (%s, %s): %s", x.Name, verdict(x.Passed, x.Severity), x.Kind, x.Pos, x.Message)
}

func verdict(passed bool, severity string) string {
	switch {
	case passed:
		return "passed"
	case severity == "warn":
		return "WARNED"
	}
	return "FAILED"
}

// writeExpectations prints, per flow, the last result of each
// expectation (rwc status).
func writeExpectations(w io.Writer, flows []run.FlowStatus) {
	first := true
	for _, f := range flows {
		for _, x := range f.Expectations {
			if first {
				fmt.Fprintf(w, "\nexpectations (the last result of each):\n")
				first = false
			}
			fmt.Fprintf(w, "  %s %s: %s %s at %s (%s): %s\n", f.Flow, x.Name, verdict(x.Passed, x.Severity), x.Outcome,
				x.CheckedAt.Format(time.RFC3339), diag.Visible(x.At), diag.Visible(x.Message))
		}
	}
}

// Tested prints rwc test's results: each flow's expectations, the failed
// ones with where they are declared and their samples, then a summary.
func Tested(w io.Writer, ts []run.Tested) {
	failed, warned, passed := 0, 0, 0
	for _, t := range ts {
		rows := "all rows"
		if t.Where != "" {
			rows = "rows where " + diag.Visible(t.Where)
		}
		checked := int64(0)
		if len(t.Results) > 0 {
			checked = t.Results[0].Checked
		}
		fmt.Fprintf(w, "%s: %d expectation(s) on %s (%d rows)\n", t.Flow, len(t.Results), rows, checked)
		for _, x := range t.Results {
			switch {
			case x.Passed:
				passed++
				fmt.Fprintf(w, "  ok   %s (%s)\n", x.Name, x.Kind)
				continue
			case x.Severity == "warn":
				warned++
			default:
				failed++
			}
			fmt.Fprintf(w, "  %s %s: %s (%s): %s\n", strings.ToLower(verdict(false, x.Severity))[:4], x.Pos, x.Name, x.Kind, diag.Visible(x.Message))
			for _, s := range x.Samples {
				fmt.Fprintf(w, "         %s\n", diag.Visible(s))
			}
		}
	}
	fmt.Fprintf(w, "\n%d failed, %d warned, %d passed\n", failed, warned, passed)
}

package view

import (
	"fmt"
	"io"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

// State renders a state report for a terminal (rwc state check and
// rwc state repair); --format json writes the report itself.
func State(w io.Writer, r run.StateReport) {
	if len(r.Repaired) > 0 {
		fmt.Fprintln(w, "repaired:")
		for _, d := range r.Repaired {
			fmt.Fprintf(w, "  %s\n", d)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "rwc state: %s\n", r.Describe())
	repairable, yours := 0, 0
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  %s %s: %s\n", f.Code, diag.Visible(f.Object), diag.Visible(f.Message))
		if f.Repair != "" {
			repairable++
			fmt.Fprintf(w, "    rwc state repair %s\n", f.Repair)
		} else {
			yours++
			fmt.Fprintf(w, "    to do: %s\n", f.Action)
		}
	}
	if repairable > 0 {
		fmt.Fprintf(w, "run rwc state repair to mend %s (it never touches a target's rows)\n", diag.Plural(repairable, "finding"))
	}
	if yours > 0 {
		fmt.Fprintf(w, "rwc state repair cannot mend %s: %s you\n", map[bool]string{true: "this", false: "these"}[yours == 1], map[bool]string{true: "it needs", false: "they need"}[yours == 1])
	}
}

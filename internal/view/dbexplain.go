package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

// PlanExplained renders rwc explain FLOW: each scan of the database's plan
// of the refresh's INSERT, and whether the window reached it.
func PlanExplained(w io.Writer, ex run.PlanExplain) {
	fmt.Fprintf(w, "flow %s: the database's plan of the refresh's INSERT (EXPLAIN, nothing run)\n", ex.Flow)
	if len(ex.Scans) == 0 {
		fmt.Fprintln(w, "  no table scan")
	}
	whole := 0
	for _, s := range ex.Scans {
		name := s.Relation
		if s.Alias != "" {
			name += " " + s.Alias
		}
		verdict := "window reached"
		if !s.Window {
			verdict = "window NOT reached: reads the whole table"
			if !s.Target {
				whole++
			}
		}
		if s.Target {
			verdict += " (the target)"
		}
		fmt.Fprintf(w, "  %s on %s: %s\n", s.Node, diag.Visible(name), verdict)
		for _, c := range s.Conditions {
			fmt.Fprintf(w, "      %s\n", diag.Visible(c))
		}
	}
	if whole > 0 {
		fmt.Fprintf(w, "%d scan%s read%s every row, whatever the window: a source joined without the window's column (rwc lint warns, RW403), or a predicate rwc cannot push (RW401, RW402)\n",
			whole, plural(whole), strings.Repeat("s", boolInt(whole == 1)))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

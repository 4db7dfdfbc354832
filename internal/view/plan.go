// Package view renders what rwc commands write for people: each view
// renders the same struct that --format json writes, and only views write
// ANSI colours.
package view

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func sideText(r compile.Rev) string {
	s := r.Source
	if r.Commit != "" {
		s += "@" + short(r.Commit)
	}
	if r.Dirty {
		s += " (uncommitted changes)"
	}
	return s
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func symbol(f compile.FlowPlan) string {
	switch {
	case f.Changes.Has(compile.ChangeNew):
		return "+"
	case f.Changes.Has(compile.ChangeRemoved):
		return "-"
	case f.Destructive, f.Refused != "":
		return "!"
	case len(f.Changes) > 0:
		return "~"
	}
	return "="
}

// PlanText renders the plan for a terminal; color adds ANSI colours.
func PlanText(w io.Writer, p *compile.Plan, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	colors := map[string]string{"+": "32", "-": "31", "!": "31;1", "~": "33", "=": "2"}
	fmt.Fprintf(w, "rwc plan: %s → %s, resolved at %s (%s)\n\n", sideText(p.Base), sideText(p.Head), p.At.Format("2006-01-02T15:04:05Z07:00"), p.Timezone)
	for _, f := range p.Flows {
		sym := symbol(f)
		fmt.Fprintf(w, "%s %-28s %s%s\n", paint(colors[sym], sym), f.Flow, paint("1", string(f.Action)), reasonsText(f.Reasons))
		if f.Refused != "" {
			fmt.Fprintf(w, "      %s %s\n", paint("31", "rwc apply refuses it:"), diag.Visible(f.Refused))
		}
		if len(f.Changes) > 0 {
			fmt.Fprintf(w, "      changes: %s\n", f.Changes)
		}
		if f.WindowChange != nil {
			fmt.Fprintf(w, "      window %s: %s\n", f.WindowChange.Column, diag.Visible(strings.TrimSpace(f.WindowChange.Gained+" "+f.WindowChange.Lost)))
		}
		if f.Window != "" {
			fmt.Fprintf(w, "      window: %s\n", diag.Visible(f.Window))
		}
		if rows := rowsText(f.RowCounts); rows != "" {
			fmt.Fprintf(w, "      rows: %s\n", rows)
		}
		if s := partitioningText(f); s != "" {
			fmt.Fprintf(w, "      %s\n", s)
		}
		if f.Distribution != "" {
			fmt.Fprintf(w, "      %s\n", f.Distribution)
		}
		for _, m := range f.Maintenance {
			fmt.Fprintf(w, "      %s\n", diag.Visible(maintenanceText(m)))
		}
		if note := flowLoss(f); note != "" {
			fmt.Fprintf(w, "      %s %s\n", paint("33", "loss:"), note)
		}
		for _, c := range f.Indexes {
			fmt.Fprintf(w, "      %s\n", diag.Visible(c.String()))
		}
		for _, x := range f.Expectations {
			fmt.Fprintf(w, "      expect %s\n", diag.Visible(expectationText(x)))
		}
		for _, n := range f.Notes {
			fmt.Fprintf(w, "      %s %s\n", paint("33", "note:"), diag.Visible(n))
		}
		for _, q := range f.SQL {
			fmt.Fprintf(w, "      %s\n", paint("2", strings.ReplaceAll(diag.VisibleLines(q), "\n", "\n        ")+";"))
		}
	}
	for _, b := range p.Backfills {
		fmt.Fprintf(w, "%s backfill %s (%s): %s\n", paint("36", "»"), diag.Visible(b.File), b.Flow, b.Status)
		if b.Held != "" {
			fmt.Fprintf(w, "      %s %s\n", paint("31", "held:"), b.Held)
		}
		fmt.Fprintf(w, "      where: %s\n", diag.Visible(b.Where))
		if b.Range != "" {
			fmt.Fprintf(w, "      recomputes: %s\n", diag.Visible(b.Range))
		}
		if rows := rowsText(b.RowCounts); rows != "" {
			fmt.Fprintf(w, "      rows: %s\n", rows)
		}
		if note := backfillLoss(b); note != "" {
			fmt.Fprintf(w, "      %s %s\n", paint("33", "loss:"), note)
		}
		fmt.Fprintf(w, "      reason: %s\n", diag.Visible(b.Reason))
	}
	for _, a := range p.Assumed {
		fmt.Fprintf(w, "\n%s %s\n", paint("33", "assumed:"), a)
	}
	if len(p.Diagnostics) > 0 {
		fmt.Fprintln(w)
		for _, d := range p.Diagnostics {
			fmt.Fprintf(w, "%s\n", paint(map[bool]string{true: "31", false: "33"}[d.Severity == diag.Error], diag.Visible(d.String())))
			if d.Hint != "" {
				fmt.Fprintf(w, "  hint: %s\n", diag.Visible(d.Hint))
			}
		}
	}
	fmt.Fprintf(w, "\n%s\n", summaryLine(p))
}

// lossNote says what a protected flow's refresh would lose beyond its last
// window ("" when nothing, or not counted).
func flowLoss(f compile.FlowPlan) string {
	if f.RowsLost == nil || *f.RowsLost == 0 {
		return ""
	}
	return "would delete " + diag.Plural(int(*f.RowsLost), "row") + " beyond the last refresh's window that its query no longer yields: reset_allowed is false, so rwc apply refuses it (--allow-loss allows it)"
}

// lossNote says what a backfill of a protected flow would lose ("" when
// nothing, or not counted).
func backfillLoss(b compile.BackfillPlan) string {
	if b.RowsLost == nil || *b.RowsLost == 0 {
		return ""
	}
	n := diag.Plural(int(*b.RowsLost), "row")
	if b.AllowLoss {
		return "deletes " + n + " its recompute cannot give back, for good (allow_loss: true)"
	}
	return "would delete " + n + " its recompute cannot give back: reset_allowed is false, so rwc apply refuses it (allow_loss: true allows it)"
}

func summaryLine(p *compile.Plan) string {
	d := "no"
	if p.Summary.Destructive {
		d = "yes (needs --allow-destructive)"
	}
	return fmt.Sprintf("Plan: %s, %d with definition changes, %s to run, destructive: %s.",
		diag.Plural(p.Summary.Flows, "flow"), p.Summary.DefinitionChanges, diag.Plural(p.Summary.PendingBackfills, "backfill"), d)
}

// maxMarkdown keeps a PR comment under GitHub's 65,536-character limit.
const maxMarkdown = 65000

// PlanMarkdown renders the plan as a pull-request comment: what needs a
// reviewer's attention first (destructive changes, rows lost, history
// left NULL or stale), then the summary table with a legend, the backfills
// still to run, and each flow's details folded; never over 65,000
// characters.
func PlanMarkdown(w io.Writer, p *compile.Plan) {
	var b strings.Builder
	fmt.Fprintf(&b, "### rwc plan\n\n`%s` → `%s`, resolved at %s (%s)\n\n", sideText(p.Base), sideText(p.Head), p.At.Format("2006-01-02T15:04:05Z07:00"), p.Timezone)
	if p.Error != "" {
		fmt.Fprintf(&b, "**rwc plan failed: nothing was planned.** %s\n", mdText(p.Error))
		if len(p.Diagnostics) > 0 {
			b.WriteString("\n")
			writeMdDiagnostics(&b, p.Diagnostics)
		}
		io.WriteString(w, b.String())
		return
	}
	if len(p.Flows) == 0 && p.Diagnostics.HasErrors() {
		fmt.Fprintf(&b, "**The specs have errors: nothing was planned.** Fix them (`rwc lint %s` shows each in its context) and push again.\n\n", p.SpecDir)
		writeMdDiagnostics(&b, p.Diagnostics)
		io.WriteString(w, b.String())
		return
	}
	writeMdAttention(&b, p)
	writeMdFlows(&b, p)
	writeMdBackfills(&b, p)
	if len(p.Diagnostics) > 0 {
		b.WriteString("\n")
		writeMdDiagnostics(&b, p.Diagnostics)
	}
	for _, a := range p.Assumed {
		fmt.Fprintf(&b, "\n_Assumed: %s._\n", mdText(a))
	}
	fmt.Fprintf(&b, "\n%s\n", summaryLine(p))
	for _, f := range p.Flows {
		d := mdDetails(f)
		if b.Len()+len(d) > maxMarkdown-200 {
			fmt.Fprintf(&b, "\n_The plan is too long for a comment: details of the remaining flows are left out. Run `rwc plan` for all of them._\n")
			break
		}
		b.WriteString(d)
	}
	io.WriteString(w, b.String())
}

// writeMdAttention lists, before anything else, what a reviewer must not
// miss: changes that lose data, and history a change leaves behind.
func writeMdAttention(b *strings.Builder, p *compile.Plan) {
	var items []string
	for _, f := range p.Flows {
		flow := "`" + f.Flow + "`"
		if note := flowLoss(f); note != "" {
			items = append(items, flow+" "+mdText(note))
		}
		for _, c := range f.Changes {
			switch c.Kind {
			case compile.ChangeColumnDropped, compile.ChangeColumnRetyped:
				// A retype that keeps every value (integer to bigint) is
				// not destructive, and then not a flow's Destructive.
				if c.Kind == compile.ChangeColumnDropped || f.Destructive {
					items = append(items, fmt.Sprintf("%s: %s loses data (rwc apply refuses it without `--allow-destructive`)", flow, mdCode(c.String())))
				}
			case compile.ChangeColumnAdded:
				items = append(items, fmt.Sprintf("%s: rows outside the window keep NULL in the added column %s; commit a backfill file to fill history", flow, mdCode(c.Column)))
			case compile.ChangeQuery:
				items = append(items, flow+": the query changed; rows outside the window keep what the old query gave them (a backfill file recomputes history)")
			}
		}
	}
	for _, bf := range p.Backfills {
		if note := backfillLoss(bf); note != "" {
			items = append(items, fmt.Sprintf("backfill %s: %s", mdCode(bf.File), mdText(note)))
		}
	}
	if len(items) == 0 {
		return
	}
	b.WriteString("> [!WARNING]\n> **Review before merging:**\n")
	for _, it := range items {
		fmt.Fprintf(b, "> - %s\n", it)
	}
	b.WriteString("\n")
}

// mdLegend explains the table's first column.
const mdLegend = "<sub>`+` new · `~` changed · `!` destructive · `-` removed from the specs · `=` unchanged definition (its window is refreshed)</sub>\n"

func writeMdFlows(b *strings.Builder, p *compile.Plan) {
	b.WriteString("| | flow | action (reasons) | changes | window | rows |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, f := range p.Flows {
		action := string(f.Action)
		if len(f.Reasons) > 0 {
			action += "<br><sub>" + strings.Join(compile.Words(f.Reasons), ", ") + "</sub>"
		}
		if f.Refused != "" {
			action += "<br><sub>rwc apply refuses it: " + mdText(f.Refused) + "</sub>"
		}
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s |\n", symbol(f), f.Flow, action,
			mdList(f.Changes.Words()), windowDays(f.WindowChange), rowsShort(f.RowCounts))
	}
	b.WriteString("\n" + mdLegend)
}

// writeMdBackfills lists the backfill files still to run, or refused; the
// applied ones, which every later plan would repeat, only as a count.
func writeMdBackfills(b *strings.Builder, p *compile.Plan) {
	applied := 0
	var rows strings.Builder
	for _, bf := range p.Backfills {
		if bf.Status == compile.BackfillApplied {
			applied++
			continue
		}
		status := bf.Status.String()
		if note := backfillLoss(bf); note != "" {
			status += " (" + note + ")"
		}
		if bf.Held != "" {
			status += " (" + mdText(bf.Held) + ")"
		}
		fmt.Fprintf(&rows, "| %s | `%s` | %s | %s | %s | %s |\n", mdCode(bf.File), bf.Flow, status, mdCode(bf.Range), rowsShort(bf.RowCounts), mdText(bf.Reason))
	}
	if rows.Len() > 0 {
		b.WriteString("\n| backfill | flow | status | recomputes | rows | reason |\n| --- | --- | --- | --- | --- | --- |\n")
		b.WriteString(rows.String())
	}
	if applied > 0 {
		fmt.Fprintf(b, "\n<sub>%s already applied, not shown.</sub>\n", diag.Plural(applied, "backfill file"))
	}
}

// windowDays is a window change in days, when it is on dates.
func windowDays(c *predicate.Change) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.GainedDays > 0 {
		parts = append(parts, fmt.Sprintf("+%d days", c.GainedDays))
	} else if c.Gained != "" {
		parts = append(parts, mdCode(c.Gained))
	}
	if c.LostDays > 0 {
		parts = append(parts, fmt.Sprintf("−%d days", c.LostDays))
	} else if c.Lost != "" {
		parts = append(parts, mdCode(c.Lost))
	}
	return strings.Join(parts, ", ")
}

// rowsShort is RowCounts in a table cell.
func rowsShort(rc compile.RowCounts) string {
	var parts []string
	if rc.RowsToDelete != nil {
		parts = append(parts, "−"+thousands(*rc.RowsToDelete))
	}
	if rc.EstimatedInserts != nil {
		parts = append(parts, "+~"+thousands(*rc.EstimatedInserts))
	}
	return strings.Join(parts, " ")
}

// mdDetails is one flow's folded details: its window (old → new), rows,
// indexes, notes and SQL.
func mdDetails(f compile.FlowPlan) string {
	var d strings.Builder
	fmt.Fprintf(&d, "\n<details><summary><code>%s</code>: %s</summary>\n\n", f.Flow, f.Action)
	switch {
	case f.OldWindow != "":
		fmt.Fprintf(&d, "Window: %s → %s\n\n", mdCode(f.OldWindow), mdCode(f.Window))
	case f.Window != "":
		fmt.Fprintf(&d, "Window: %s\n\n", mdCode(f.Window))
	}
	if f.WindowChange != nil {
		fmt.Fprintf(&d, "Window change on `%s`: %s\n\n", f.WindowChange.Column, mdCode(strings.TrimSpace(f.WindowChange.Gained+" "+f.WindowChange.Lost)))
	}
	if rows := rowsText(f.RowCounts); rows != "" {
		fmt.Fprintf(&d, "Rows: %s\n\n", rows)
	}
	if s := partitioningText(f); s != "" {
		fmt.Fprintf(&d, "%s\n\n", mdText(s))
	}
	if f.Distribution != "" {
		fmt.Fprintf(&d, "%s\n\n", mdText(f.Distribution))
	}
	for _, m := range f.Maintenance {
		fmt.Fprintf(&d, "- %s\n", mdText(maintenanceText(m)))
	}
	if len(f.Maintenance) > 0 {
		d.WriteString("\n")
	}
	for _, c := range f.Indexes {
		fmt.Fprintf(&d, "- %s\n", mdText(c.String()))
	}
	if len(f.Indexes) > 0 {
		d.WriteString("\n")
	}
	for _, x := range f.Expectations {
		fmt.Fprintf(&d, "- expect %s: %s%s\n", mdCode(x.Name), mdCode(x.Definition), mdText(changeText(x)))
	}
	if len(f.Expectations) > 0 {
		d.WriteString("\n")
	}
	for _, n := range f.Notes {
		fmt.Fprintf(&d, "> **Note:** %s\n\n", mdText(n))
	}
	if len(f.SQL) > 0 {
		d.WriteString(mdBlock("sql", strings.Join(f.SQL, ";\n\n")+";"))
	}
	d.WriteString("</details>\n")
	return d.String()
}

func writeMdDiagnostics(b *strings.Builder, ds diag.List) {
	for _, d := range ds {
		fmt.Fprintf(b, "- **%s %s** %s: %s", d.Severity, d.Code, mdCode(d.Pos.String()), mdText(d.Message))
		if d.Hint != "" {
			fmt.Fprintf(b, " _Hint: %s_", mdText(d.Hint))
		}
		b.WriteString("\n")
	}
}

// rowsText says what a refresh deletes (counted) and inserts (estimated),
// each labelled as what it is.
func rowsText(rc compile.RowCounts) string {
	var parts []string
	if rc.RowsToDelete != nil {
		parts = append(parts, fmt.Sprintf("deletes %s (counted now)", thousands(*rc.RowsToDelete)))
	}
	if rc.EstimatedInserts != nil {
		parts = append(parts, fmt.Sprintf("inserts ~%s (the planner's estimate)", thousands(*rc.EstimatedInserts)))
	}
	return strings.Join(parts, ", ")
}

// thousands writes n with thousands separators: 43,435.
func thousands(n int64) string {
	return message.NewPrinter(language.English).Sprint(n)
}

func mdList(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return "`" + strings.Join(s, "`, `") + "`"
}

// The markdown plan is a pull request comment, and what it shows of the
// specs (a string in a predicate, a comment in a query, a file name, a
// backfill's reason) is the author's: none of it may end the span or
// block it stands in and write markdown of its own.

// mdCode is s as inline code, on one line, between backtick runs longer
// than any in s.
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	s = diag.Visible(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", "\\|").Replace(s))
	tick := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return tick + s + tick
}

// mdBlock is s as a fenced code block whose fence is longer than any
// backtick run in s.
func mdBlock(lang, s string) string {
	s = diag.VisibleLines(s)
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + lang + "\n" + s + "\n" + fence + "\n"
}

// mdText is free text on one line, its markdown and HTML escaped.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range diag.Visible(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)) {
		// What links, images, HTML, code, emphasis and mentions (@team,
		// which notify) start with, mid-line.
		if strings.ContainsRune("\\`*[]<>|~&@", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// partitioningText says how a partitioned target's refresh writes: the
// partitions it swaps in whole, the rest by DELETE and INSERT.
func partitioningText(f compile.FlowPlan) string {
	if f.Partitioning == nil {
		return ""
	}
	s := fmt.Sprintf("partitioned by %s, one partition a %s", f.Partitioning.By, f.Partitioning.Interval)
	switch n := len(f.Swapped); {
	case n == 0:
		return s + "; no partition swapped whole"
	case n == 1:
		return s + "; swaps in the partition of " + f.Swapped[0]
	default:
		return fmt.Sprintf("%s; swaps in %d partitions, %s to %s", s, n, f.Swapped[0], f.Swapped[n-1])
	}
}

// maintenanceText is what maintain: immediate's triggers on one source do.
func maintenanceText(m compile.Maintenance) string {
	what := map[compile.Maintain]string{compile.MaintainDelta: "the query over the new rows alone inserted",
		compile.MaintainDays: "the partitions their rows hold recomputed", compile.MaintainWindow: "the window recomputed"}
	return fmt.Sprintf("maintain: immediate: a write to %s keeps the target inside the writer's transaction: inserts, %s; updates and deletes, %s; TRUNCATE, the window recomputed (%s)",
		m.Source, what[m.Inserts], what[m.Changes], m.Function)
}

// expectationText is one expectation in a plan: its name, what it checks,
// and what changed in it.
func expectationText(x compile.PlanExpectation) string {
	return x.Name + ": " + x.Definition + changeText(x)
}

// changeText is what changed in an expectation, after it.
func changeText(x compile.PlanExpectation) string {
	switch x.Change {
	case "added":
		return " (added)"
	case "changed":
		return " (changed; was " + x.Was + ")"
	}
	return ""
}

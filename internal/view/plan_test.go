package view

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
)

// What the markdown plan shows of the specs stays in the span or block it
// stands in: a predicate's string, a query, a file name or a backfill's
// reason can hold backticks, line breaks and markdown, and none of it may
// write a heading, an image or a table row of its own into the comment.
func TestMarkdownKeepsSpecTextInPlace(t *testing.T) {
	evil := "x\n```\n\n## Injected\n\n<img src=x>\n| fake | row |\n```sql\n"
	p := &compile.Plan{
		Flows: []compile.FlowPlan{{Flow: "t", Action: "create", Window: "s == \"" + evil + "\"", SQL: []string{"SELECT '" + evil + "'", "SELECT ````"}}},
		Backfills: []compile.BackfillPlan{{File: "pipelines/backfills/a`\n## Injected.yaml", Flow: "t", Status: compile.BackfillPending,
			Range: "`" + evil, Reason: evil + " ![i](x) <b>"}},
		Diagnostics: diag.List{{Code: "RW202", Message: "unknown column " + evil, Pos: diag.Pos{File: "p`\n## Injected.yaml", Line: 1, Column: 1}}},
	}
	var b bytes.Buffer
	PlanMarkdown(&b, p)
	fence := 0 // the open fence's length, 0 outside a block
	for _, line := range strings.Split(b.String(), "\n") {
		if run := len(line) - len(strings.TrimLeft(line, "`")); run >= 3 && (fence == 0 || run >= fence && strings.TrimLeft(line, "`") == "") {
			if fence == 0 {
				fence = run
			} else {
				fence = 0
			}
			continue
		}
		if fence == 0 && (strings.HasPrefix(line, "## Injected") || strings.HasPrefix(line, "<img") || strings.HasPrefix(line, "| fake")) {
			t.Errorf("spec text wrote its own markdown: %q\n%s", line, b.String())
		}
		if fence == 0 && (strings.Contains(line, "![i]") || strings.Contains(line, "<b>")) {
			t.Errorf("unescaped markdown or HTML outside code: %q", line)
		}
	}
	if fence != 0 {
		t.Errorf("a code block is left open:\n%s", b.String())
	}
}

// The text plan shows no control character of a spec's: an ESC, a CR or a
// line break in a predicate's string, a query, a backfill's reason or
// where:, which pushdown's deparsed SQL prints raw, cannot rewrite the
// terminal or start a GitHub workflow command at a line's start.
func TestTextPlanShowsNoControlCharacters(t *testing.T) {
	evil := "\x1b[2J\r\n::error file=x::pwned\x07"
	p := &compile.Plan{
		Flows:       []compile.FlowPlan{{Flow: "t", Action: "create", Window: `s == "` + evil + `"`, Notes: []string{evil}, SQL: []string{"SELECT '" + evil + "'\nFROM src"}}},
		Backfills:   []compile.BackfillPlan{{File: "b" + evil + ".yaml", Flow: "t", Status: compile.BackfillPending, Where: evil, Range: evil, Reason: evil}},
		Diagnostics: diag.List{{Code: "RW202", Message: evil, Hint: evil, Pos: diag.Pos{File: evil}}},
	}
	for name, write := range map[string]func(*bytes.Buffer){"text": func(b *bytes.Buffer) { PlanText(b, p, false) }, "markdown": func(b *bytes.Buffer) { PlanMarkdown(b, p) }} {
		var b bytes.Buffer
		write(&b)
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "::") || strings.ContainsAny(line, "\x1b\r\x07") { // the runner trims the line's start
				t.Errorf("%s: line %q", name, line)
			}
		}
	}
}

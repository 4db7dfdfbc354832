package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sources gives the lines of a file, for showing a diagnostic in context.
type Sources func(file string) []string

// WriteText prints diagnostics the way a compiler does: position, severity,
// code and message, the source line with a caret, then the hint.
func WriteText(w io.Writer, l List, src Sources) {
	for _, d := range l {
		fmt.Fprintf(w, "%s\n", Visible(d.String()))
		if src != nil && d.Line > 0 {
			if lines := src(d.File); d.Line <= len(lines) {
				text, col := excerpt(Visible(strings.ReplaceAll(lines[d.Line-1], "\t", " ")), d.Column)
				gutter := fmt.Sprintf("%5d | ", d.Line)
				fmt.Fprintf(w, "%s%s\n", gutter, text)
				if col > 0 && col <= utf8.RuneCountInString(text)+1 {
					fmt.Fprintf(w, "%s| %s^\n", strings.Repeat(" ", len(gutter)-2), strings.Repeat(" ", col-1))
				}
			}
		}
		if d.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", d.Hint)
		}
	}
}

// maxExcerpt is the most of a source line an excerpt shows, around the
// column: a generated line can be megabytes long.
const maxExcerpt = 120

// excerpt cuts line to maxExcerpt runes around col (1-based, 0: none) and
// says where col is in the cut.
func excerpt(line string, col int) (string, int) {
	r := []rune(line)
	if len(r) <= maxExcerpt {
		return line, col
	}
	start := max(0, min(col-1-maxExcerpt/2, len(r)-maxExcerpt))
	out := string(r[start : start+maxExcerpt])
	if start > 0 {
		out, col = "…"+out, col-start+1
	}
	if start+maxExcerpt < len(r) {
		out += "…"
	}
	return out, col
}

// Visible replaces control characters with U+FFFD: a spec's text, file
// names included, reaches terminals and CI logs, where an ESC or a CR
// would rewrite what is shown, and a line break would start a line of its
// own (a GitHub workflow command, say). Every view prints text that came
// from a spec through it.
func Visible(s string) string { return noCommands(strings.Map(visibleRune(false), s)) }

// VisibleLines is Visible for text whose line breaks are its own (SQL
// rwc laid out): it keeps them, and replaces every other control.
func VisibleLines(s string) string { return noCommands(strings.Map(visibleRune(true), s)) }

// noCommands keeps a line from reading as a GitHub Actions workflow
// command (the runner acts on a line that starts with "::" once leading
// white space is trimmed): a zero-width space goes before the "::".
func noCommands(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, "::") {
			lines[i] = l[:len(l)-len(t)] + "\u200b" + t
		}
	}
	return strings.Join(lines, "\n")
}

func visibleRune(keepNewline bool) func(rune) rune {
	return func(r rune) rune {
		if r == '\n' && keepNewline || !unicode.IsControl(r) {
			return r
		}
		return utf8.RuneError
	}
}

// Counts returns the number of errors and warnings.
func (l List) Counts() (errors, warnings int) {
	for _, d := range l {
		if d.Severity == Error {
			errors++
		} else {
			warnings++
		}
	}
	return
}

// Summary is "2 errors, 1 warning" or "no problems".
func (l List) Summary() string {
	e, w := l.Counts()
	if e == 0 && w == 0 {
		return "no problems"
	}
	return Plural(e, "error") + ", " + Plural(w, "warning")
}

// Plural says "1 word" or "n words".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WriteJSON prints {"diagnostics": [...], "errors": n, "warnings": n}.
func WriteJSON(w io.Writer, l List) error {
	e, wn := l.Counts()
	if l == nil {
		l = List{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Diagnostics List `json:"diagnostics"`
		Errors      int  `json:"errors"`
		Warnings    int  `json:"warnings"`
	}{l, e, wn})
}

// WriteGitHub prints GitHub Actions workflow commands, which show as
// annotations on the pull request's files.
func WriteGitHub(w io.Writer, l List) {
	for _, d := range l {
		props := "file=" + ghProp(d.File)
		if d.Line > 0 {
			props += fmt.Sprintf(",line=%d", d.Line)
		}
		if d.Column > 0 {
			props += fmt.Sprintf(",col=%d", d.Column)
		}
		props += ",title=" + ghProp("rwc "+d.Code)
		msg := d.Message
		if d.Hint != "" {
			msg += "\nhint: " + d.Hint
		}
		fmt.Fprintf(w, "::%s %s::%s\n", d.Severity, props, ghData(msg))
	}
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

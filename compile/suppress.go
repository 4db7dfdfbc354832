package compile

import (
	"regexp"
	"strings"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

var nolint = regexp.MustCompile(`rwc:nolint((?:[ ,]+RW\d{3})+)`)

// suppress drops warnings that the user acknowledged with a comment
// `rwc:nolint RW403` on the diagnostic's line or the line above it (a YAML
// # comment, or a -- comment inside a query). Errors cannot be suppressed.
func suppress(sp *spec.Project, ds diag.List) diag.List {
	out := ds[:0]
	for _, d := range ds {
		if d.Severity == diag.Warning && acknowledged(sp.Sources[d.File], d.Line, d.Code) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func acknowledged(lines []string, line int, code string) bool {
	for _, l := range []int{line, line - 1} {
		if l < 1 || l > len(lines) {
			continue
		}
		for _, m := range nolint.FindAllStringSubmatch(lines[l-1], -1) {
			for _, c := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ' ' || r == ',' }) {
				if c == code {
					return true
				}
			}
		}
	}
	return false
}

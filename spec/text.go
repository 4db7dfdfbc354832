package spec

import (
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
)

// Text is a string value from a YAML file (a predicate or a query) that can
// say where any character of it is in the file, through block scalars,
// quoting and folding alike.
type Text struct {
	Value string
	Pos   diag.Pos   // where the value's node starts
	runes []diag.Pos // file position of each rune of Value
}

// newText aligns value with the file's source from node's position on.
// Quoting, escapes, indentation and folding only add or turn characters into
// line breaks, so a greedy walk that skips source characters until the next
// value character matches finds every character's origin.
func newText(src []string, file string, n *yaml.Node) Text {
	t := Text{Value: n.Value, Pos: diag.Pos{File: file, Line: n.Line, Column: n.Column}}
	line, col := n.Line, n.Column // 1-based; col counts runes
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		line, col = n.Line+1, 1
	}
	lines := map[int][]rune{} // only the lines the value spans are converted
	next := func() (rune, diag.Pos, bool) {
		if line-1 < len(src) {
			l, ok := lines[line]
			if !ok {
				l = []rune(src[line-1])
				lines[line] = l
			}
			if col-1 < len(l) {
				r := l[col-1]
				p := diag.Pos{File: file, Line: line, Column: col}
				col++
				return r, p, true
			}
			p := diag.Pos{File: file, Line: line, Column: col}
			line, col = line+1, 1
			return '\n', p, true
		}
		return 0, diag.Pos{}, false
	}
	last := t.Pos
	for _, v := range n.Value {
		if v == 0 {
			// YAML cannot hold a raw NUL, only an escape (\0, \x00,
			// \u0000) that starts where the walk stands; searching for the
			// NUL itself would run to the end of the file.
			p := diag.Pos{File: file, Line: line, Column: col}
			t.runes = append(t.runes, p)
			last = p
			continue
		}
		for {
			r, p, ok := next()
			if !ok {
				t.runes = append(t.runes, last)
				break
			}
			if r == v || (v == ' ' && r == '\n') {
				t.runes = append(t.runes, p)
				last = p
				break
			}
		}
	}
	return t
}

// At maps a 1-based line and rune column inside Value to the file.
func (t Text) At(line, col int) diag.Pos {
	idx := 0
	for i := 1; i < line; i++ {
		nl := strings.IndexByte(t.Value[idx:], '\n')
		if nl < 0 {
			break
		}
		idx += nl + 1
	}
	return t.AtOffset(idx + byteLen(t.Value[idx:], col-1))
}

// AtOffset maps a byte offset in Value to the file.
func (t Text) AtOffset(off int) diag.Pos {
	if off < 0 || len(t.runes) == 0 {
		return t.Pos
	}
	i := utf8.RuneCountInString(t.Value[:min(off, len(t.Value))])
	if i >= len(t.runes) {
		p := t.runes[len(t.runes)-1]
		p.Column++
		return p
	}
	return t.runes[i]
}

// byteLen is the byte length of the first n runes of s (or of s).
func byteLen(s string, n int) int {
	b := 0
	for i := 0; i < n && b < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[b:])
		b += size
	}
	return b
}

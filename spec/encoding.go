package spec

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/rwc-dev/rwc/diag"
)

// encodingProblem refuses a spec that is not UTF-8 text, before YAML reads
// it: yaml.v3 decodes UTF-16 itself, so such a file would lint clean while
// rwc stores and quotes its bytes as if they were UTF-8 (PostgreSQL then
// refuses the deployment's snapshot). The position is where the problem
// starts; nothing of the file is quoted.
func encodingProblem(raw []byte, file string) *diag.Diagnostic {
	const hint = "save the file as UTF-8 (without a byte-order mark or with the UTF-8 one)"
	for _, bom := range []struct {
		mark []byte
		name string
	}{
		{[]byte{0x00, 0x00, 0xFE, 0xFF}, "UTF-32"}, {[]byte{0xFF, 0xFE, 0x00, 0x00}, "UTF-32"},
		{[]byte{0xFE, 0xFF}, "UTF-16"}, {[]byte{0xFF, 0xFE}, "UTF-16"},
	} {
		if bytes.HasPrefix(raw, bom.mark) {
			return encodingError(file, diag.Pos{File: file, Line: 1, Column: 1}, hint, "the file is %s-encoded; rwc reads UTF-8 only", bom.name)
		}
	}
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		return encodingError(file, posOf(raw, i, file), hint+"; a file with many NUL bytes is UTF-16 or not text at all",
			"the file holds a NUL byte, which a spec cannot hold")
	}
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			return encodingError(file, posOf(raw, i, file), hint, "the file is not valid UTF-8 (byte 0x%02X)", raw[i])
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			// YAML refuses them too, without saying where.
			return encodingError(file, posOf(raw, i, file), "remove it; to put one in a value, write it as an escape in a double-quoted string (\"\\e\")",
				"the file holds the control character 0x%02X, which YAML does not allow", r)
		}
		i += n
	}
	return nil
}

func encodingError(file string, pos diag.Pos, hint, format string, args ...any) *diag.Diagnostic {
	return &diag.Diagnostic{Code: "RW121", Severity: diag.Error, Pos: pos, Hint: hint, Message: fmt.Sprintf(format, args...)}
}

// posOf is the line and column (in characters of the valid UTF-8 before
// it) of byte offset i, with YAML's line breaks.
func posOf(raw []byte, i int, file string) diag.Pos {
	before := raw[:i]
	line := 1 + len(lineBreak.FindAllIndex(before, -1))
	start := 0
	if locs := lineBreak.FindAllIndex(before, -1); len(locs) > 0 {
		start = locs[len(locs)-1][1]
	}
	return diag.Pos{File: file, Line: line, Column: 1 + utf8.RuneCount(before[start:])}
}

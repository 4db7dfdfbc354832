package databricks

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Spark SQL's lexemes, as far as import needs them: it finds the clauses of
// a statement by its tokens and rewrites the few lexemes where Spark SQL and
// PostgreSQL differ (backquoted names, double-quoted and backslash-escaped
// strings). Every token keeps its byte offsets into the file.

type tokKind int

const (
	tIdent   tokKind = iota // a bare word (keywords included)
	tQuoted                 // `name`: Value is the name
	tString                 // '…' or "…": Value is the decoded string
	tNumber                 // 7, 1.5, 1e3, 7L
	tOp                     // operators and punctuation
	tBadChar                // an unterminated string or quoted name
)

type token struct {
	kind       tokKind
	text       string // as written
	value      string // tQuoted, tString: decoded
	start, end int    // byte offsets into the source
}

// word reports whether t is the bare word w (case-insensitive).
func (t token) word(w string) bool { return t.kind == tIdent && strings.EqualFold(t.text, w) }

// name is an identifier's name: a bare word lower-cased (Spark's names are
// case-insensitive), a quoted one as written.
func (t token) name() string {
	if t.kind == tQuoted {
		return t.value
	}
	return strings.ToLower(t.text)
}

func (t token) isName() bool { return t.kind == tIdent || t.kind == tQuoted }

// lex splits src into tokens; comments and whitespace are dropped. It never
// fails: an unterminated string or name is one tBadChar token to the end.
func lex(src string) []token {
	var toks []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case unicode.IsSpace(r) || r == '\ufeff': // a byte order mark too
			i += w
		case strings.HasPrefix(src[i:], "--"):
			if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(src)
			}
		case strings.HasPrefix(src[i:], "/*"):
			if j := strings.Index(src[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(src)
			}
		case r == '`':
			toks = append(toks, quotedName(src, i))
			i = toks[len(toks)-1].end
		case r == '\'' || r == '"':
			toks = append(toks, stringLit(src, i))
			i = toks[len(toks)-1].end
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if r2 != '_' && r2 != '$' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += w2
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], start: i, end: j})
			i = j
		case r >= '0' && r <= '9' || (r == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' ||
				(src[j] == 'e' || src[j] == 'E') && j+1 < len(src) && (src[j+1] >= '0' && src[j+1] <= '9' || src[j+1] == '-' || src[j+1] == '+') ||
				(src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			toks = append(toks, token{kind: tNumber, text: src[i:j], start: i, end: j})
			i = j
		default:
			n := w
			for _, op := range []string{"<=>", "!~*", "<>", "!=", "<=", ">=", "==", "||", "&&", "::", "!~", "~*"} {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			toks = append(toks, token{kind: tOp, text: src[i : i+n], start: i, end: i + n})
			i += n
		}
	}
	return toks
}

// quotedName reads `name` at i (“ doubles a backquote).
func quotedName(src string, i int) token {
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		if src[j] == '`' {
			if j+1 < len(src) && src[j+1] == '`' {
				b.WriteByte('`')
				j += 2
				continue
			}
			return token{kind: tQuoted, text: src[i : j+1], value: b.String(), start: i, end: j + 1}
		}
		b.WriteByte(src[j])
		j++
	}
	return token{kind: tBadChar, text: src[i:], start: i, end: len(src)}
}

// stringLit reads a Spark string at i: quoted with ' or ", backslash
// escapes as Spark reads them, a doubled quote as one.
func stringLit(src string, i int) token {
	q := src[i]
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\' && j+1 < len(src):
			b.WriteString(sparkEscape(src[j+1]))
			j += 2
		case c == q && j+1 < len(src) && src[j+1] == q:
			b.WriteByte(q)
			j += 2
		case c == q:
			return token{kind: tString, text: src[i : j+1], value: b.String(), start: i, end: j + 1}
		default:
			b.WriteByte(c)
			j++
		}
	}
	return token{kind: tBadChar, text: src[i:], start: i, end: len(src)}
}

func sparkEscape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case '0':
		return "\x00"
	case 'b':
		return "\b"
	case 'Z':
		return "\x1a"
	}
	return string(c)
}

// sparkString writes s as a Spark string literal: single quotes, with
// backslash escapes where Spark would read a backslash or quote.
func sparkString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
	return "'" + r.Replace(s) + "'"
}

// pgString writes s as a PostgreSQL string literal (standard conforming).
func pgString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// sparkIdent quotes a name for Spark SQL when it needs it.
func sparkIdent(s string) string {
	if plainName(s) {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// match is the index of the token closing the bracket at i, or -1.
func match(toks []token, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].kind != tOp {
			continue
		}
		switch toks[j].text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// lines maps byte offsets of a file to 1-based lines and columns (in
// characters).
type lines struct {
	src    string
	starts []int
}

func newLines(src string) *lines {
	l := &lines{src: src, starts: []int{0}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			l.starts = append(l.starts, i+1)
		}
	}
	return l
}

func (l *lines) at(off int) (int, int) {
	if off < 0 {
		return 1, 1
	}
	if off > len(l.src) {
		off = len(l.src)
	}
	lo, hi := 0, len(l.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1, utf8.RuneCountInString(l.src[l.starts[lo]:off]) + 1
}

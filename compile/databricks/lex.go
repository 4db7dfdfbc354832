package databricks

import (
	"strconv"
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

// dialect is whose lexemes a text is written in.
type dialect int

const (
	spark    dialect = iota // Databricks pipeline SQL: import's input
	postgres                // a spec's query: export's input
)

// lex splits Spark SQL into tokens; comments and whitespace are dropped.
// It never fails: an unterminated string or name is one tBadChar token to
// the end.
func lex(src string) []token { return lexAs(src, spark) }

// lexPG splits PostgreSQL text into tokens: standard strings (a backslash
// is a character, a doubled quote one quote), E'…' strings, $$…$$ strings
// (all tString), "…" names (tQuoted).
func lexPG(src string) []token { return lexAs(src, postgres) }

func lexAs(src string, d dialect) []token {
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
			i = blockComment(src, i)
		case r == '`' && d == spark:
			toks = append(toks, quotedName(src, i))
			i = toks[len(toks)-1].end
		case d == postgres && (r == '\'' || r == '"' || r == '$' && dollarTag(src[i:]) != ""):
			toks = append(toks, pgLiteral(src, i, toks))
			i = toks[len(toks)-1].end
		case r == '\'' || r == '"':
			toks = appendSparkString(toks, stringLit(src, i, false))
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
			if d == spark && j == i+1 && (r == 'r' || r == 'R') && j < len(src) && (src[j] == '\'' || src[j] == '"') {
				// R'…': Spark's raw string, without escapes.
				toks = appendSparkString(toks, stringLit(src, i, true))
				i = toks[len(toks)-1].end
				continue
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

// blockComment is the end of the comment at i. Block comments nest in
// Spark SQL and in PostgreSQL alike: /* /* */ x */ is one comment, and x
// is not part of the text.
func blockComment(src string, i int) int {
	depth := 0
	for j := i; j+1 < len(src); {
		switch src[j : j+2] {
		case "/*":
			depth++
			j += 2
		case "*/":
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(src)
}

// appendSparkString appends a string token; one right after another
// string is one string, as Spark SQL concatenates adjacent strings (a
// doubled quote inside a string ends it and starts the next: no quote).
func appendSparkString(toks []token, t token) []token {
	if n := len(toks); n > 0 && t.kind == tString && toks[n-1].kind == tString {
		prev := &toks[n-1]
		prev.value += t.value
		prev.end = t.end
		return toks
	}
	return append(toks, t)
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
// escapes as Spark reads them (raw: R'…', none). A doubled quote is not an
// escape: it ends the string, and the next one begins.
func stringLit(src string, i int, raw bool) token {
	open := i
	if raw {
		i++
	}
	q := src[i]
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\' && j+1 < len(src) && !raw:
			s, n := sparkEscape(src[j+1:])
			b.WriteString(s)
			j += 1 + n
		case c == q:
			return token{kind: tString, text: src[open : j+1], value: b.String(), start: open, end: j + 1}
		default:
			b.WriteByte(c)
			j++
		}
	}
	return token{kind: tBadChar, text: src[open:], start: open, end: len(src)}
}

// sparkEscape decodes the escape after a backslash, as Spark's
// unescapeSQLString does, and says how many bytes it took: \uXXXX,
// \UXXXXXXXX, three octal digits, the letters below; \% and \_ keep their
// backslash (for LIKE), any other character stands for itself.
func sparkEscape(s string) (string, int) {
	hex := func(n int) (string, int, bool) {
		if len(s) < 1+n {
			return "", 0, false
		}
		v, err := strconv.ParseUint(s[1:1+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return "", 0, false
		}
		return string(rune(v)), 1 + n, true
	}
	switch {
	case s[0] == 'u':
		if r, n, ok := hex(4); ok {
			return r, n
		}
	case s[0] == 'U':
		if r, n, ok := hex(8); ok {
			return r, n
		}
	case len(s) >= 3 && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7':
		return string(rune((s[0]-'0')*64 + (s[1]-'0')*8 + (s[2] - '0'))), 3
	}
	switch s[0] {
	case 'n':
		return "\n", 1
	case 't':
		return "\t", 1
	case 'r':
		return "\r", 1
	case '0':
		return "\x00", 1
	case 'b':
		return "\b", 1
	case 'Z':
		return "\x1a", 1
	case '%', '_':
		return "\\" + s[:1], 1
	}
	_, n := utf8.DecodeRuneInString(s)
	return s[:n], n
}

// dollarTag is the $tag$ opening a PostgreSQL dollar-quoted string at the
// start of s, or "".
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9' || c >= 0x80:
		default:
			return ""
		}
	}
	return ""
}

// pgLiteral reads PostgreSQL's '…' (E'…' when the token before is a bare
// E right against it), $tag$…$tag$ or "…" at i.
func pgLiteral(src string, i int, before []token) token {
	bad := token{kind: tBadChar, text: src[i:], start: i, end: len(src)}
	if src[i] == '$' {
		tag := dollarTag(src[i:])
		j := strings.Index(src[i+len(tag):], tag)
		if j < 0 {
			return bad
		}
		end := i + len(tag) + j + len(tag)
		return token{kind: tString, text: src[i:end], value: src[i+len(tag) : end-len(tag)], start: i, end: end}
	}
	q := src[i]
	escapes := q == '\'' && len(before) > 0 && before[len(before)-1].end == i && before[len(before)-1].word("e")
	var b strings.Builder
	for j := i + 1; j < len(src); j++ {
		c := src[j]
		switch {
		case c == '\\' && escapes && j+1 < len(src):
			b.WriteString(pgEscape(src[j+1]))
			j++
		case c == q && j+1 < len(src) && src[j+1] == q:
			b.WriteByte(q)
			j++
		case c == q:
			kind := tString
			if q == '"' {
				kind = tQuoted
			}
			return token{kind: kind, text: src[i : j+1], value: b.String(), start: i, end: j + 1}
		default:
			b.WriteByte(c)
		}
	}
	return bad
}

// pgEscape is an E'…' string's escape (the common ones; octal, hex and
// Unicode escapes stay as written, and export warns of E'…' strings).
func pgEscape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case 'b':
		return "\b"
	case 'f':
		return "\f"
	case '\\', '\'':
		return string(c)
	}
	return "\\" + string(c)
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

// pairBrackets pairs every bracket of toks with its closing one, as match
// does, in one pass: pairs[i] is the index closing toks[i], else -1.
func pairBrackets(toks []token) []int {
	pairs := make([]int, len(toks))
	var open []int
	for i, t := range toks {
		pairs[i] = -1
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case "(", "[":
			open = append(open, i)
		case ")", "]":
			if n := len(open); n > 0 {
				pairs[open[n-1]] = i
				open = open[:n-1]
			}
		}
	}
	return pairs
}

// lines maps byte offsets of a file to 1-based lines and columns (in
// characters).
type lines struct {
	src    string
	starts []int
	// The last offset asked for and its column: diagnostics come in the
	// order of the file, so counting on from there keeps a long line's
	// many columns linear.
	lastLine, lastOff, lastCol int
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
	from, col := l.starts[lo], 1
	if l.lastLine == lo+1 && l.lastOff <= off {
		from, col = l.lastOff, l.lastCol
	}
	col += utf8.RuneCountInString(l.src[from:off])
	l.lastLine, l.lastOff, l.lastCol = lo+1, off, col
	return lo + 1, col
}

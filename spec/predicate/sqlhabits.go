package predicate

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// SQL habits: people who know REPLACE WHERE from SQL write BETWEEN, AND,
// OR, NOT, =, <>, IN (...), IS NULL, DATE '...', CURRENT_DATE, INTERVAL
// and LIKE in predicates. None of it is CEL, and cel-go's own messages
// ("mismatched input 'AND' expecting <EOF>") do not say what to write
// instead. When a predicate fails to parse or check, sqlHabits reads it
// as SQL tokens and reports each habit at its token, with its CEL
// spelling; the whole predicate rewritten in CEL is offered when that
// rewrite compiles. docs/predicates.md has the table ("SQL → CEL").

type habitTokKind int

const (
	hIdent habitTokKind = iota
	hNum
	hStr
	hOp
)

type habitTok struct {
	kind habitTokKind
	text string
	pre  string // the whitespace before it
	at   Loc
}

// habitLex splits text into CEL-ish tokens, SQL's <> and lone = included.
// It never fails: an unknown character is a one-character operator.
func habitLex(text string) []habitTok {
	rs := []rune(text)
	var toks []habitTok
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n && i < len(rs); k++ {
			if rs[i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			i++
		}
	}
	for i < len(rs) {
		start := i
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			adv(1)
		}
		pre := string(rs[start:i])
		if i >= len(rs) {
			break
		}
		at := Loc{line, col}
		from := i
		r := rs[i]
		kind := hOp
		switch {
		case r == '_' || unicode.IsLetter(r):
			kind = hIdent
			for i < len(rs) && (rs[i] == '_' || unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i])) {
				adv(1)
			}
		case unicode.IsDigit(r):
			kind = hNum
			for i < len(rs) && (unicode.IsDigit(rs[i]) || rs[i] == '.') {
				adv(1)
			}
		case r == '\'' || r == '"':
			kind = hStr
			adv(1)
			for i < len(rs) && rs[i] != r && rs[i] != '\n' {
				if rs[i] == '\\' {
					adv(1)
				}
				adv(1)
			}
			adv(1)
		default:
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch two {
			case "==", "!=", "<>", "<=", ">=", "&&", "||":
				adv(2)
			default:
				adv(1)
			}
		}
		toks = append(toks, habitTok{kind: kind, text: string(rs[from:i]), pre: pre, at: at})
	}
	return toks
}

// habit is one SQL construct found, and its CEL spelling.
type habit struct {
	at      Loc
	message string
	cel     string // the construct in CEL; "" when CEL has none
	hint    string // when cel is "": what to do instead
}

type habitReader struct {
	toks   []habitTok
	cols   map[string]Column
	habits []habit
	// exact is false once a habit has no CEL spelling: the rewrite is
	// then not the predicate, and is not offered.
	exact bool
}

// sqlHabits reports the SQL constructs in text with their CEL spelling,
// or nothing when it finds none.
func sqlHabits(text string, cols map[string]Column) []Issue {
	r := &habitReader{toks: habitLex(text), cols: cols, exact: true}
	// One line: a hint is one line, and CEL strings hold no newline.
	whole := strings.TrimSpace(lineBreaks.ReplaceAllString(r.rewrite(0, len(r.toks)), " "))
	if len(r.habits) == 0 {
		return nil
	}
	offer := ""
	if r.exact && whole != strings.TrimSpace(lineBreaks.ReplaceAllString(text, " ")) {
		var list []Column
		for _, c := range cols {
			list = append(list, c)
		}
		if _, issues := compileWith(whole, list, false); len(issues) == 0 {
			offer = whole
		}
	}
	sort.SliceStable(r.habits, func(i, j int) bool {
		a, b := r.habits[i].at, r.habits[j].at
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
	var issues []Issue
	for i, h := range r.habits {
		hint := h.hint
		if h.cel != "" {
			hint = "in CEL: " + h.cel
		}
		if i == 0 && offer != "" && offer != h.cel {
			hint += "; the whole predicate in CEL: " + offer
		}
		issues = append(issues, Issue{Code: "RW201", At: h.at, Message: h.message, Hint: hint})
	}
	return issues
}

func (r *habitReader) add(h habit) { r.habits = append(r.habits, h) }

func (r *habitReader) isKw(i int, words ...string) bool {
	if r.is(i, hIdent, strings.EqualFold, words) {
		_, col := r.cols[r.toks[i].text]
		return !col
	}
	return false
}

// isWord is isKw for words that are SQL wherever they stand, even where a
// column has that name: DATE '2024-01-01' is never CEL.
func (r *habitReader) isWord(i int, words ...string) bool {
	return r.is(i, hIdent, strings.EqualFold, words)
}

func (r *habitReader) isOp(i int, ops ...string) bool {
	return r.is(i, hOp, func(a, b string) bool { return a == b }, ops)
}

// is reports whether token i is of kind and its text one of texts, as same
// compares them.
func (r *habitReader) is(i int, kind habitTokKind, same func(a, b string) bool, texts []string) bool {
	if i < 0 || i >= len(r.toks) || r.toks[i].kind != kind {
		return false
	}
	for _, t := range texts {
		if same(r.toks[i].text, t) {
			return true
		}
	}
	return false
}

// match is the index of the bracket closing the one at i (within end), or -1.
func (r *habitReader) match(i, end int) int {
	depth := 0
	for j := i; j < end; j++ {
		switch {
		case r.isOp(j, "(", "["):
			depth++
		case r.isOp(j, ")", "]"):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// operandStart is where the operand ending at token j begins: a column,
// a literal, a bracketed expression or a call.
func (r *habitReader) operandStart(j, floor int) int {
	if j < floor {
		return -1
	}
	if r.isOp(j, ")", "]") {
		depth := 0
		for k := j; k >= floor; k-- {
			switch {
			case r.isOp(k, ")", "]"):
				depth++
			case r.isOp(k, "(", "["):
				depth--
				if depth == 0 {
					if k-1 >= floor && r.toks[k-1].kind == hIdent && r.isOp(k, "(") {
						return k - 1
					}
					return k
				}
			}
		}
		return -1
	}
	if r.toks[j].kind == hOp {
		return -1
	}
	return j
}

// boundEnd is where an operand starting at i ends: before a top-level
// AND, OR, &&, ||, comparison, closing bracket or comma.
func (r *habitReader) boundEnd(i, end int) int {
	depth := 0
	for j := i; j < end; j++ {
		switch {
		case r.isOp(j, "(", "["):
			depth++
		case r.isOp(j, ")", "]"):
			if depth == 0 {
				return j
			}
			depth--
		case depth == 0 && j > i && (r.isKw(j, "and", "or") || r.isOp(j, "&&", "||", ",", "==", "!=", "<>", "=", "<", "<=", ">", ">=")):
			return j
		}
	}
	return end
}

type piece struct {
	tok  int // the first token it stands for
	text string
}

// rewrite returns toks[from:to] in CEL, recording the habits it met.
func (r *habitReader) rewrite(from, to int) string {
	var out []piece
	emit := func(tok int, text string) { out = append(out, piece{tok, text}) }
	// operand pops what was emitted for the operand ending before token i
	// and returns its CEL text, and the operand's first token.
	operand := func(i int) (string, int, bool) {
		j := i - 1
		s := r.operandStart(j, from)
		if s < 0 {
			return "", 0, false
		}
		k := len(out)
		for k > 0 && out[k-1].tok >= s {
			k--
		}
		var b strings.Builder
		for _, p := range out[k:] {
			b.WriteString(p.text)
		}
		out = out[:k]
		return strings.TrimSpace(b.String()), s, true
	}
	for i := from; i < to; i++ {
		t := r.toks[i]
		switch {
		case r.isKw(i, "between") || (r.isKw(i, "not") && r.isKw(i+1, "between")):
			not := r.isKw(i, "not")
			kw := i
			if not {
				kw = i + 1
			}
			x, s, ok := operand(i)
			and := -1
			if ok {
				for j, depth := kw+1, 0; j < to; j++ {
					if r.isOp(j, "(", "[") {
						depth++
					} else if r.isOp(j, ")", "]") {
						depth--
					} else if depth == 0 && (r.isKw(j, "and") || r.isOp(j, "&&")) {
						and = j
						break
					}
				}
			}
			if !ok || and < 0 {
				r.add(habit{at: r.toks[kw].at, message: "BETWEEN is SQL, not CEL", cel: "x >= low && x <= high"})
				r.exact = false
				emit(i, t.pre+t.text)
				continue
			}
			hiEnd := r.boundEnd(and+1, to)
			lo := strings.TrimSpace(r.rewrite(kw+1, and))
			hi := strings.TrimSpace(r.rewrite(and+1, hiEnd))
			cel := fmt.Sprintf("%s >= %s && %s <= %s", x, lo, x, hi)
			msg := "BETWEEN is SQL, not CEL"
			if not {
				cel = fmt.Sprintf("(%s < %s || %s > %s)", x, lo, x, hi)
				msg = "NOT BETWEEN is SQL, not CEL"
			}
			r.add(habit{at: r.toks[kw].at, message: msg, cel: cel})
			emit(s, r.toks[s].pre+cel)
			i = hiEnd - 1
		case (r.isKw(i, "in") || (r.isKw(i, "not") && r.isKw(i+1, "in"))) && r.isOp(i+1+b2i(r.isKw(i, "not")), "("):
			not := r.isKw(i, "not")
			open := i + 1
			if not {
				open = i + 2
			}
			closing := r.match(open, to)
			x, s, ok := operand(i)
			if closing < 0 || !ok {
				r.add(habit{at: r.toks[open].at, message: "a list in parentheses is SQL, not CEL", cel: "x in [a, b]"})
				r.exact = false
				emit(i, t.pre+t.text)
				continue
			}
			list := strings.TrimSpace(r.rewrite(open+1, closing))
			cel := fmt.Sprintf("%s in [%s]", x, list)
			msg := "IN (...) is SQL, not CEL: CEL's lists are in brackets"
			if not {
				cel = fmt.Sprintf("!(%s in [%s])", x, list)
				msg = "NOT IN (...) is SQL, not CEL"
			}
			r.add(habit{at: r.toks[open].at, message: msg, cel: cel})
			emit(s, r.toks[s].pre+cel)
			i = closing
		case r.isKw(i, "is") && (r.isKw(i+1, "null") || (r.isKw(i+1, "not") && r.isKw(i+2, "null"))):
			x, s, ok := operand(i)
			if !ok {
				x, s = "the column", i
			}
			n := 2
			h := habit{at: t.at, message: "IS NULL is SQL; CEL predicates in rwc have no test for NULL",
				hint: fmt.Sprintf("a row whose %s is NULL is in no window (a comparison with NULL is not TRUE): a window cannot select it", x)}
			if r.isKw(i+1, "not") {
				n = 3
				h.message = "IS NOT NULL is SQL; CEL predicates in rwc have no test for NULL"
				h.hint = fmt.Sprintf("leave it out: a row whose %s is NULL is already outside any comparison of %s (one with NULL is not TRUE)", x, x)
			}
			r.add(h)
			r.exact = false
			emit(s, r.toks[s].pre+x+" IS NULL")
			i += n - 1
		case r.isKw(i, "like") || (r.isKw(i, "not") && r.isKw(i+1, "like")):
			not := r.isKw(i, "not")
			lit := i + 1 + b2i(not)
			x, s, ok := operand(i)
			cel := ""
			if ok && lit < to && r.toks[lit].kind == hStr {
				cel = likeCEL(x, r.toks[lit].text)
			}
			if cel == "" {
				r.add(habit{at: t.at, message: "LIKE is SQL, not CEL", hint: "CEL has x.startsWith('a'), x.endsWith('a') and x.contains('a'); LIKE patterns other than 'a%', '%a' and '%a%' have no CEL spelling in rwc"})
				r.exact = false
				emit(i, t.pre+t.text)
				continue
			}
			if not {
				cel = "!" + cel
			}
			r.add(habit{at: t.at, message: "LIKE is SQL, not CEL", cel: cel})
			emit(s, r.toks[s].pre+cel)
			i = lit
		case r.isKw(i, "and"):
			r.add(habit{at: t.at, message: fmt.Sprintf("%s is SQL; CEL writes &&", t.text), cel: "&&"})
			emit(i, t.pre+"&&")
		case r.isKw(i, "or"):
			r.add(habit{at: t.at, message: fmt.Sprintf("%s is SQL; CEL writes ||", t.text), cel: "||"})
			emit(i, t.pre+"||")
		case r.isKw(i, "not"):
			// SQL's NOT binds looser than a comparison: NOT a = b is
			// !(a == b).
			end := r.clauseEnd(i+1, to)
			inner := strings.TrimSpace(r.rewrite(i+1, end))
			cel := "!" + inner
			if end-(i+1) > 1 && !(r.isOp(i+1, "(") && r.match(i+1, to) == end-1) {
				cel = "!(" + inner + ")"
			}
			r.add(habit{at: t.at, message: fmt.Sprintf("%s is SQL; CEL writes !", t.text), cel: cel})
			emit(i, t.pre+cel)
			i = end - 1
		case r.isOp(i, "=", "<>"):
			op, msg := "==", "= is SQL; CEL compares with =="
			if t.text == "<>" {
				op, msg = "!=", "<> is SQL; CEL writes !="
			}
			left := ""
			if s := r.operandStart(i-1, from); s >= 0 {
				for _, p := range out {
					if p.tok >= s {
						left += p.text
					}
				}
			}
			right := r.celOf(i+1, r.boundEnd(i+1, to))
			r.add(habit{at: t.at, message: msg, cel: strings.TrimSpace(strings.TrimSpace(left) + " " + op + " " + right)})
			emit(i, t.pre+op)
		case r.isWord(i, "date", "timestamp", "timestamptz") && i+1 < to && r.toks[i+1].kind == hStr:
			fn := "date"
			lit := r.toks[i+1].text
			if !strings.EqualFold(t.text, "date") {
				fn, lit = "timestamp", rfc3339Literal(lit)
			}
			cel := fmt.Sprintf("%s(%s)", fn, lit)
			r.add(habit{at: t.at, message: fmt.Sprintf("%s %s is SQL's typed literal, not CEL", strings.ToUpper(t.text), r.toks[i+1].text), cel: cel})
			emit(i, t.pre+cel)
			i++
		case r.isKw(i, "current_date", "current_timestamp", "now", "getdate", "today") && !r.isOp(i+1, "(") ||
			r.isKw(i, "now", "getdate") && r.isOp(i+1, "(") && r.isOp(i+2, ")"):
			cel := "current_date()"
			if !strings.EqualFold(t.text, "current_date") && !strings.EqualFold(t.text, "today") {
				cel = "current_timestamp()"
			}
			n := 1
			if r.isOp(i+1, "(") {
				n = 3
			}
			r.add(habit{at: t.at, message: fmt.Sprintf("%s is SQL; CEL calls %s", strings.Join(tokTexts(r.toks[i:i+n]), ""), cel), cel: cel})
			emit(i, t.pre+cel)
			i += n - 1
		case r.isOp(i, "-", "+") && (r.isKw(i+1, "interval") || (i+1 < to && r.toks[i+1].kind == hNum && r.dateOperand(i))):
			days, n, ok := r.interval(i + 1)
			x, s, okX := operand(i)
			if !ok || !okX {
				r.add(habit{at: t.at, message: "date arithmetic is SQL, not CEL", hint: "CEL adds days with date_add(d, n) and date_sub(d, n), n an integer literal"})
				r.exact = false
				emit(i, t.pre+t.text)
				continue
			}
			if t.text == "-" {
				days = -days
			}
			cel := fmt.Sprintf("date_add(%s, %d)", x, days)
			r.add(habit{at: t.at, message: "date arithmetic is SQL, not CEL", cel: cel})
			emit(s, r.toks[s].pre+cel)
			i += n
		case t.kind == hStr && strings.HasPrefix(t.text, "'") && i+1 < to && r.toks[i+1].kind == hStr && r.toks[i+1].pre == "" && strings.HasPrefix(r.toks[i+1].text, "'"):
			// 'O''Brien': SQL doubles a quote inside a string.
			j := i
			var parts []string
			for j < to && r.toks[j].kind == hStr && strings.HasPrefix(r.toks[j].text, "'") && (j == i || r.toks[j].pre == "") {
				parts = append(parts, strings.TrimSuffix(strings.TrimPrefix(r.toks[j].text, "'"), "'"))
				j++
			}
			cel := strconv.Quote(strings.Join(parts, "'"))
			r.add(habit{at: r.toks[i+1].at, message: "'' inside a string is SQL's escaped quote, not CEL's", cel: cel})
			emit(i, t.pre+cel)
			i = j - 1
		case t.kind == hStr && r.isTimestampComparison(i):
			cel := fmt.Sprintf("timestamp(%s)", rfc3339Literal(t.text))
			r.add(habit{at: t.at, message: fmt.Sprintf("a string compared with a timestamp column: %s is not a timestamp in CEL", t.text), cel: cel})
			emit(i, t.pre+cel)
		case t.kind == hStr && r.isKw(i-2, "date_add", "date_sub") && r.isOp(i-1, "(") && dateLit.MatchString(t.text):
			cel := fmt.Sprintf("date(%s)", t.text)
			r.add(habit{at: t.at, message: fmt.Sprintf("%s is a string, not a date, as the argument of %s()", t.text, r.toks[i-2].text), cel: cel})
			emit(i, t.pre+cel)
		default:
			emit(i, t.pre+t.text)
		}
	}
	var b strings.Builder
	for _, p := range out {
		b.WriteString(p.text)
	}
	return b.String()
}

// celOf is toks[from:to] in CEL, without recording its habits (the
// caller's own rewrite meets them).
func (r *habitReader) celOf(from, to int) string {
	scratch := &habitReader{toks: r.toks, cols: r.cols, exact: true}
	return strings.TrimSpace(scratch.rewrite(from, to))
}

// clauseEnd is where the operand of NOT starting at i ends: before a
// top-level AND, OR, &&, ||, closing bracket or comma.
func (r *habitReader) clauseEnd(i, end int) int {
	depth := 0
	for j := i; j < end; j++ {
		switch {
		case r.isOp(j, "(", "["):
			depth++
		case r.isOp(j, ")", "]"):
			if depth == 0 {
				return j
			}
			depth--
		case depth == 0 && j > i && (r.isKw(j, "and", "or") || r.isOp(j, "&&", "||", ",")):
			return j
		}
	}
	return end
}

// dateOperand says whether the operand before the + or - at token i is a
// date: a date column, CURRENT_DATE, current_date(), DATE '...'.
func (r *habitReader) dateOperand(i int) bool {
	j := i - 1
	if j < 0 {
		return false
	}
	if r.isKw(j, "current_date") || (r.toks[j].kind == hStr && r.isWord(j-1, "date")) {
		return true
	}
	if r.toks[j].kind == hIdent {
		c, ok := r.cols[r.toks[j].text]
		return ok && c.Type.Family == pgtype.Date
	}
	if r.isOp(j, ")") {
		s := r.operandStart(j, 0)
		return s >= 0 && r.isKw(s, "current_date", "date", "date_add", "date_sub") || s >= 0 && strings.EqualFold(r.toks[s].text, "current_date")
	}
	return false
}

var intervalText = regexp.MustCompile(`(?i)^\s*(\d+)\s*(day|days|week|weeks)?\s*$`)

// interval reads the days of INTERVAL '7 days', INTERVAL 7 DAYS,
// INTERVAL '7' DAY or a bare 7 at token i: the days, and the tokens read.
func (r *habitReader) interval(i int) (int, int, bool) {
	if i >= len(r.toks) {
		return 0, 0, false
	}
	if r.toks[i].kind == hNum {
		n, err := strconv.Atoi(r.toks[i].text)
		return n, 1, err == nil
	}
	if !r.isKw(i, "interval") || i+1 >= len(r.toks) {
		return 0, 0, false
	}
	v := r.toks[i+1]
	text := v.text
	if v.kind == hStr {
		text = strings.Trim(text, `'"`)
	} else if v.kind != hNum {
		return 0, 0, false
	}
	read := 2
	if i+2 < len(r.toks) && r.isKw(i+2, "day", "days", "week", "weeks") {
		text += " " + r.toks[i+2].text
		read = 3
	}
	m := intervalText.FindStringSubmatch(text)
	if m == nil {
		return 0, 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, 0, false
	}
	if strings.HasPrefix(strings.ToLower(m[2]), "week") {
		n *= 7
	}
	return n, read, true
}

// isTimestampComparison says whether the string at token i is compared
// with a timestamp column.
func (r *habitReader) isTimestampComparison(i int) bool {
	isTS := func(j int) bool {
		if j < 0 || j >= len(r.toks) || r.toks[j].kind != hIdent {
			return false
		}
		c, ok := r.cols[r.toks[j].text]
		return ok && (c.Type.Family == pgtype.Timestamp || c.Type.Family == pgtype.TimestampTZ)
	}
	cmp := []string{"==", "!=", "<", "<=", ">", ">=", "=", "<>"}
	return (r.isOp(i-1, cmp...) && isTS(i-2)) || (r.isOp(i+1, cmp...) && isTS(i+2))
}

var lineBreaks = regexp.MustCompile(`[ \t\r]*\n\s*`)

var dateLit = regexp.MustCompile(`^['"]\d{4}-\d{2}-\d{2}['"]$`)

// rfc3339Literal turns SQL's '2024-01-01' or '2024-01-01 10:00:00' into
// an RFC 3339 literal, UTC when it names no zone.
func rfc3339Literal(lit string) string {
	q := lit[:1]
	s := strings.Trim(lit, `'"`)
	if dateLit.MatchString(q + s + q) {
		s += "T00:00:00Z"
	} else if len(s) >= 19 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
		if !strings.ContainsAny(s[19:], "Zz+-") {
			s += "Z"
		}
	}
	return q + s + q
}

// likeCEL is x LIKE pattern in CEL, or "" when the pattern has no CEL
// spelling (wildcards inside it, _).
func likeCEL(x, lit string) string {
	q := lit[:1]
	p := strings.TrimSuffix(strings.TrimPrefix(lit, q), q)
	pre, suf := strings.HasPrefix(p, "%"), strings.HasSuffix(p, "%") && len(p) > 1
	core := strings.TrimSuffix(strings.TrimPrefix(p, "%"), "%")
	if core == "" || strings.ContainsAny(core, "%_\\") {
		return ""
	}
	fn := ""
	switch {
	case pre && suf:
		fn = "contains"
	case pre:
		fn = "endsWith"
	case suf:
		fn = "startsWith"
	default:
		return fmt.Sprintf("%s == %s%s%s", x, q, core, q)
	}
	return fmt.Sprintf("%s.%s(%s%s%s)", x, fn, q, core, q)
}

func tokTexts(ts []habitTok) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.text)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

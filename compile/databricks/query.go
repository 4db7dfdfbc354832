package databricks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rwc-dev/rwc/compile/query"
)

// A flow's query, from Spark SQL to PostgreSQL: the lexemes that differ
// (backquoted names, double-quoted and backslash-escaped strings, type
// names) and the common functions with another spelling are rewritten;
// functions known to differ without a rewrite are kept and flagged, and
// whatever else PostgreSQL does not accept is left to rwc lint, whose
// diagnostics then point into the spec.

// queryRewrite is one function rewrite: its arity (-1: any) and how its
// arguments are written in PostgreSQL (nil: rewritten elsewhere).
type queryRewrite struct {
	args  int
	parts []string // text between the arguments: parts[0] A parts[1] B …
	note  string   // a difference the rewrite keeps, for a warning
}

var queryRewrites = map[string]queryRewrite{
	"date_add":              {args: 2, parts: []string{"(", " + ", ")"}},
	"dateadd":               {args: 2, parts: []string{"(", " + ", ")"}},
	"date_sub":              {args: 2, parts: []string{"(", " - ", ")"}},
	"datediff":              {args: 2, parts: []string{"(", " - ", ")"}},
	"current_date":          {args: 0, parts: []string{"current_date"}},
	"current_timestamp":     {args: 0, parts: []string{"current_timestamp"}},
	"nvl":                   {args: 2, parts: []string{"coalesce(", ", ", ")"}},
	"ifnull":                {args: 2, parts: []string{"coalesce(", ", ", ")"}},
	"if":                    {args: 3, parts: []string{"CASE WHEN ", " THEN ", " ELSE ", " END"}},
	"iff":                   {args: 3, parts: []string{"CASE WHEN ", " THEN ", " ELSE ", " END"}},
	"count_if":              {args: 1, parts: []string{"count(*) FILTER (WHERE ", ")"}},
	"collect_list":          {args: 1, parts: []string{"array_agg(", ")"}},
	"collect_set":           {args: 1, parts: []string{"array_agg(DISTINCT ", ")"}},
	"approx_count_distinct": {args: 1, parts: []string{"count(DISTINCT ", ")"}, note: "approx_count_distinct() became an exact count(DISTINCT …)"},
	"to_date":               {args: 1, parts: []string{"CAST(", " AS date)"}},
	"to_timestamp":          {args: 1, parts: []string{"CAST(", " AS timestamptz)"}},
}

// reviewFunctions exist in both languages with other meanings, or only in
// Spark SQL: the query keeps them and import says to review them.
var reviewFunctions = map[string]string{
	"date_format": "its patterns are Java's; PostgreSQL's to_char has its own", "from_unixtime": "use to_timestamp(n)",
	"unix_timestamp": "use extract(epoch FROM …)", "explode": "use unnest(…) in FROM", "size": "use cardinality(…)",
	"array_contains": "use x = ANY(array)", "regexp_extract": "use substring(… FROM pattern) or regexp_match", "split": "use string_to_array or regexp_split_to_array",
	"struct": "use a row or jsonb_build_object", "named_struct": "use jsonb_build_object", "get_json_object": "use ->> on jsonb",
	"from_json": "use ::jsonb", "to_json": "use to_jsonb", "percentile_approx": "use percentile_cont(…) WITHIN GROUP (ORDER BY …)",
	"first": "PostgreSQL has no first(); use min/max or a window", "last": "PostgreSQL has no last(); use min/max or a window",
	"any_value": "PostgreSQL 16 has any_value; on 15 use min", "to_date": "with a format, Spark's patterns are Java's (PostgreSQL's to_date has its own)",
	"date_trunc": "the unit is the first argument in both, but Spark also accepts 'MON', 'YY', …", "trunc": "Spark's trunc(date, unit) is date_trunc(unit, date)",
	"concat": "PostgreSQL's concat() skips NULLs where Spark's returns NULL", "array_join": "use array_to_string", "element_at": "use array[i] (1-based in both)",
	"sequence": "use generate_series", "current_timezone": "use current_setting('TimeZone')", "monotonically_increasing_id": "use row_number() OVER ()",
}

// qbuild writes the PostgreSQL query and remembers where each piece of it
// came from.
type qbuild struct {
	f     *fileImport
	toks  []token
	pairs []int // pairs[i]: the token closing the bracket toks[i] opens, or -1
	out   strings.Builder
	from  []int
	to    []int
	group []int // offsets in out of GROUP BY ALL's ALL
	alls  []int // their offsets in the file
}

func (q *qbuild) write(src int, s string) {
	q.from = append(q.from, q.out.Len())
	q.to = append(q.to, src)
	q.out.WriteString(s)
}

func (q *qbuild) source(off int) int {
	i := sort.SearchInts(q.from, off+1) - 1
	if i < 0 {
		return q.to[0]
	}
	return q.to[i]
}

// translateQuery is the flow's query in PostgreSQL.
func (f *fileImport) translateQuery(toks []token, end int) (string, *qbuild) {
	q := &qbuild{f: f, toks: toks, pairs: pairBrackets(toks)}
	q.span(0, len(toks))
	if n := len(toks); n > 0 && end > toks[n-1].end {
		// A comment after the last token (an rwc:nolint, say) stays.
		q.write(toks[n-1].end, strings.TrimRight(f.src[toks[n-1].end:end], " \t\r\n"))
	}
	if len(q.group) > 0 {
		q.groupByAll()
	}
	return strings.TrimSpace(q.out.String()), q
}

// span writes toks[i:j], with the source's layout (and comments) between
// them.
func (q *qbuild) span(i, j int) {
	for k := i; k < j; k++ {
		if k > i {
			gap := q.f.src[q.toks[k-1].end:q.toks[k].start]
			q.write(q.toks[k-1].end, gap)
		}
		k = q.token(k, j)
	}
}

// token writes token k (and what it heads: a call, a cast) and returns the
// last token it consumed.
func (q *qbuild) token(k, j int) int {
	t := q.toks[k]
	switch {
	case t.kind == tQuoted:
		q.write(t.start, `"`+strings.ReplaceAll(t.value, `"`, `""`)+`"`)
	case t.kind == tString:
		if t.text == pgString(t.value) {
			q.write(t.start, t.text)
		} else {
			q.write(t.start, pgString(t.value))
		}
	case t.kind == tIdent && k+1 < j && q.toks[k+1].text == "(":
		return q.call(k, j)
	case t.kind == tOp && t.text == "::" && k+1 < j && q.toks[k+1].kind == tIdent:
		q.write(t.start, "::")
		return q.typeName(k+1, j)
	case t.word("group") && k+2 < j && q.toks[k+1].word("by") && q.toks[k+2].word("all") && (k+3 == j || !q.toks[k+3].isName() && q.toks[k+3].text != "("):
		q.write(t.start, "GROUP BY ")
		q.group = append(q.group, q.out.Len())
		q.alls = append(q.alls, q.toks[k+2].start)
		return k + 2
	default:
		q.write(t.start, t.text)
	}
	return k
}

// typeName writes a Spark type name (STRING, DECIMAL(10,2)) as PostgreSQL's.
func (q *qbuild) typeName(k, j int) int {
	end := k + 1
	if end < j && q.toks[end].text == "(" {
		if m := q.pairs[end]; m > 0 && m < j {
			end = m + 1
		}
	}
	text := q.f.text(q.toks[k:end])
	if t, err := pgTypeOf(text); err == nil {
		q.write(q.toks[k].start, t.Canonical)
	} else {
		q.write(q.toks[k].start, text)
	}
	return end - 1
}

// next is the token after toks[i] and, when it opens a bracket, all
// inside it: walking a call's arguments so takes time linear in the
// query however deeply its calls nest.
func (q *qbuild) next(i int) int {
	if q.pairs[i] > i {
		return q.pairs[i] + 1
	}
	return i + 1
}

// args are the index ranges of the arguments inside the brackets open..close.
func (q *qbuild) args(open, close int) [][2]int {
	var out [][2]int
	if close == open+1 {
		return nil
	}
	from := open + 1
	for i := open + 1; i < close; i = q.next(i) {
		if t := q.toks[i]; t.kind == tOp && t.text == "," {
			out = append(out, [2]int{from, i})
			from = i + 1
		}
	}
	return append(out, [2]int{from, close})
}

func (q *qbuild) call(k, j int) int {
	t := q.toks[k]
	open := k + 1
	close := q.pairs[open]
	if close < 0 || close >= j {
		q.write(t.start, t.text)
		return k
	}
	name := strings.ToLower(t.text)
	args := q.args(open, close)
	if name == "cast" || name == "try_cast" {
		return q.cast(k, open, close)
	}
	if rw, ok := queryRewrites[name]; ok && (rw.args < 0 || rw.args == len(args)) {
		for i, a := range args {
			q.write(t.start, rw.parts[i])
			q.span(a[0], a[1])
		}
		q.write(t.start, rw.parts[len(args)])
		if rw.note != "" {
			q.f.ds.Warnf("RW609", q.f.pos(t.start), "review the query: the result differs from Databricks' where the note says", "%s", rw.note)
		}
		return close
	}
	if why, ok := reviewFunctions[name]; ok {
		q.f.ds.Warnf("RW609", q.f.pos(t.start), why, "%s() is Spark SQL that rwc import does not translate: review it", name)
	}
	q.write(t.start, t.text+"(")
	q.span(open+1, close)
	q.write(q.toks[close].start, ")")
	return close
}

// cast writes CAST(x AS type) with the type in PostgreSQL's name;
// TRY_CAST, which yields NULL where the cast fails, has no PostgreSQL
// equivalent and is flagged.
func (q *qbuild) cast(k, open, close int) int {
	t := q.toks[k]
	as := -1
	for i := open + 1; i < close; i = q.next(i) {
		if q.toks[i].word("as") {
			as = i
		}
	}
	if strings.EqualFold(t.text, "try_cast") {
		q.f.ds.Warnf("RW609", q.f.pos(t.start), "PostgreSQL's CAST fails where TRY_CAST yields NULL: make sure the values cast", "TRY_CAST became CAST")
	}
	if as < 0 {
		q.write(t.start, "CAST(")
		q.span(open+1, close)
		q.write(q.toks[close].start, ")")
		return close
	}
	q.write(t.start, "CAST(")
	q.span(open+1, as)
	q.write(q.toks[as].start, " AS ")
	q.typeName(as+1, close)
	q.write(q.toks[close].start, ")")
	return close
}

// groupByAll replaces GROUP BY ALL (Spark: group by every select item
// that is not an aggregate) with those items: PostgreSQL has no GROUP BY
// ALL. The items are found from the query's analysis with the grouping
// left out.
func (q *qbuild) groupByAll() {
	text := q.out.String()
	if len(q.group) > 1 {
		q.f.ds.Warnf("RW609", q.f.pos(q.alls[1]), "list the grouping columns: GROUP BY a, b", "only the outermost GROUP BY ALL is rewritten")
	}
	at := q.group[0]
	// ALL's own text was not written: the analysis sees no GROUP BY.
	probe := strings.TrimSuffix(text[:at], "GROUP BY ") + text[at:]
	a, se := query.Analyze(probe)
	if se != nil {
		q.f.ds.Warnf("RW609", q.f.pos(q.alls[0]), "list the grouping columns: GROUP BY a, b",
			"GROUP BY ALL cannot be rewritten: the query does not parse as PostgreSQL (%s)", se.Message)
		q.insert(at, "ALL")
		return
	}
	if a.Star != nil {
		q.f.ds.Warnf("RW609", q.f.pos(q.alls[0]), "list the columns instead of *, and the grouping columns", "GROUP BY ALL with * cannot be rewritten")
		q.insert(at, "ALL")
		return
	}
	var keys []string
	for i, c := range a.Columns {
		if c.Kind == query.Aggregate || c.Kind == query.Window {
			continue
		}
		if c.Kind == query.Plain {
			keys = append(keys, itemText(probe, a, i))
		} else {
			keys = append(keys, fmt.Sprint(i+1))
		}
	}
	if len(keys) == 0 {
		// Every item aggregates: one group, which is no GROUP BY at all.
		q.remove(at-len("GROUP BY "), at)
		return
	}
	q.insert(at, strings.Join(keys, ", "))
}

// itemText is select item i's expression as written (a plain column
// reference: up to the end of its name).
func itemText(sql string, a *query.Analysis, i int) string {
	off := a.Columns[i].Offset
	toks := lexPG(sql[off:])
	var b strings.Builder
	for k, t := range toks {
		if k > 0 && t.text != "." && toks[k-1].text != "." {
			break
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func (q *qbuild) insert(at int, s string) {
	text := q.out.String()
	q.out.Reset()
	q.out.WriteString(text[:at] + s + text[at:])
	for i := range q.from {
		if q.from[i] >= at && i > 0 {
			q.from[i] += len(s)
		}
	}
}

func (q *qbuild) remove(from, to int) {
	text := q.out.String()
	q.out.Reset()
	q.out.WriteString(text[:from] + text[to:])
	for i := range q.from {
		if q.from[i] >= to {
			q.from[i] -= to - from
		}
	}
}

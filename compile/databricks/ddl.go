package databricks

import (
	"strings"

	"github.com/rwc-dev/rwc/diag"
)

// Databricks pipeline SQL is not PostgreSQL: its statements are split and
// their clauses found here, by tokens, and only the pieces that are SQL
// expressions or queries go on to PostgreSQL's parser.

// statement is one ;-separated statement of a file.
type statement struct {
	toks []token
	end  int // offset of the ; that ends it, or of the file's end
}

// column is one entry of a column list.
type column struct {
	name     string
	typ      string // the Spark type as written
	typStart int
	start    int
	notNull  bool
}

// table is a CREATE … STREAMING TABLE.
type table struct {
	name     string
	schema   string
	start    int // offset of the table's name
	stmt     int // offset of CREATE
	columns  []column
	hasList  bool
	listAt   int
	pk       []string
	pkAt     int
	partBy   []string
	partAt   int
	reset    *bool
	resetAt  int
	flow     *flow // the inline FLOW REPLACE WHERE, or a CREATE FLOW's
	declared bool  // has a CREATE STREAMING TABLE
}

// flow is a REPLACE WHERE flow: its predicate's tokens and its query.
type flow struct {
	name   string
	nameAt int
	pred   []token
	predAt int
	query  []token
	end    int // where the query's text ends (comments after its last token included)
	byName bool
	at     int // offset of the flow's clause
}

// refreshWhere is REFRESH STREAMING TABLE t WHERE pred: a one-off override.
type refreshWhere struct {
	table string
	at    int
	pred  []token
}

// parsed is what a file declares.
type parsed struct {
	tables    []*table
	overrides []refreshWhere
}

func (p *parsed) table(name string) *table {
	for _, t := range p.tables {
		if t.name == name {
			return t
		}
	}
	return nil
}

// splitStatements cuts tokens at the semicolons outside brackets.
func splitStatements(toks []token, size int) []statement {
	var out []statement
	depth, from := 0, 0
	for i, t := range toks {
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ";":
			if depth <= 0 {
				if i > from {
					out = append(out, statement{toks: toks[from:i], end: t.start})
				}
				from, depth = i+1, 0
			}
		}
	}
	if from < len(toks) {
		out = append(out, statement{toks: toks[from:], end: size})
	}
	return out
}

// reader walks one statement's tokens.
type reader struct {
	toks []token
	stop int // where the statement ends (its ;)
	i    int
	file *fileImport
}

func (r *reader) peek(k int) token {
	if r.i+k < len(r.toks) {
		return r.toks[r.i+k]
	}
	return token{kind: tOp, text: "", start: r.end()}
}

func (r *reader) end() int {
	if len(r.toks) == 0 {
		return 0
	}
	return r.toks[len(r.toks)-1].end
}

func (r *reader) done() bool { return r.i >= len(r.toks) }

// accept consumes the words if they come next.
func (r *reader) accept(words ...string) bool {
	for k, w := range words {
		if !r.peek(k).word(w) {
			return false
		}
	}
	r.i += len(words)
	return true
}

// qualifiedName reads a[.b[.c]]: the table name and its schema.
func (r *reader) qualifiedName() (name, schema string, at int, ok bool) {
	if !r.peek(0).isName() {
		return "", "", r.peek(0).start, false
	}
	at = r.peek(0).start
	parts := []string{r.peek(0).name()}
	r.i++
	for r.peek(0).text == "." && r.peek(1).isName() {
		parts = append(parts, r.peek(1).name())
		r.i += 2
	}
	if len(parts) == 3 {
		r.file.ds.Warnf("RW613", r.file.pos(at), "rwc has no catalogs: the table is created in the spec's schema",
			"catalog %s is dropped", parts[0])
		parts = parts[1:]
	}
	if len(parts) == 2 {
		schema = parts[0]
	}
	return parts[len(parts)-1], schema, at, true
}

// group reads a bracketed group at the reader: the tokens inside it.
func (r *reader) group() ([]token, bool) {
	if r.peek(0).text != "(" {
		return nil, false
	}
	j := match(r.toks, r.i)
	if j < 0 {
		return nil, false
	}
	inner := r.toks[r.i+1 : j]
	r.i = j + 1
	return inner, true
}

// splitCommas cuts tokens at top-level commas.
func splitCommas(toks []token) [][]token {
	var out [][]token
	depth, from := 0, 0
	for i, t := range toks {
		switch {
		case t.kind == tOp && (t.text == "(" || t.text == "[" || t.text == "<"):
			depth++
		case t.kind == tOp && (t.text == ")" || t.text == "]" || t.text == ">"):
			depth--
		case t.kind == tOp && t.text == "," && depth == 0:
			out = append(out, toks[from:i])
			from = i + 1
		}
	}
	return append(out, toks[from:])
}

// queryStart says whether the reader is at the start of a query.
func (r *reader) queryStart() bool {
	t := r.peek(0)
	if t.word("select") || t.word("with") || t.word("from") || t.word("values") || t.word("table") {
		return true
	}
	// (SELECT …)
	return t.text == "(" && (r.peek(1).word("select") || r.peek(1).word("with"))
}

// text is the source text of toks, as written.
func (f *fileImport) text(toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	return f.src[toks[0].start:toks[len(toks)-1].end]
}

// statementWords are the words a statement may start with that import
// recognises but does not carry, and why.
var notCarried = map[string]string{
	"insert":  "DML into a target is not part of a pipeline: run it against the target with psql after the first rwc apply (rows it writes outside the window are kept)",
	"set":     "session settings are not carried: rwc runs in UTC unless told otherwise (--time-zone)",
	"use":     "USE is not carried: give the schema with --schema",
	"refresh": "REFRESH … FULL is rwc refresh --full (refused where reset_allowed: false)",
	"apply":   "AUTO CDC flows have no equivalent in rwc",
}

// statement reads one statement into p.
func (f *fileImport) statement(st statement, p *parsed) {
	r := &reader{toks: st.toks, stop: st.end, file: f}
	first := r.peek(0)
	switch {
	case r.accept("create"):
		r.accept("or", "refresh")
		r.accept("or", "replace")
		for r.accept("temporary") || r.accept("private") || r.accept("live") {
		}
		switch {
		case r.accept("streaming", "table"), r.accept("streaming", "live", "table"):
			f.createTable(r, p, first.start)
		case r.accept("flow"):
			f.createFlow(r, p, first.start)
		default:
			what := "CREATE " + strings.ToUpper(strings.Join(tokenTexts(st.toks[r.i:min(r.i+2, len(st.toks))]), " "))
			f.ds.Warnf("RW604", f.pos(first.start), "only REPLACE WHERE flows are imported; write the materialized view as an rwc flow or leave it on Databricks",
				"%s … is not a REPLACE WHERE flow: not imported", what)
		}
	case r.accept("refresh", "streaming", "table"):
		f.refresh(r, p, first.start)
	default:
		hint, ok := notCarried[strings.ToLower(first.text)]
		if !ok {
			hint = "import reads CREATE STREAMING TABLE, CREATE FLOW and REFRESH STREAMING TABLE … WHERE"
		}
		f.ds.Warnf("RW604", f.pos(first.start), hint, "%s statement not imported", strings.ToUpper(first.text))
	}
}

func tokenTexts(ts []token) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.text
	}
	return out
}

// tableFor is p's table name, created on first mention.
func (p *parsed) tableFor(name, schema string, at int) *table {
	if t := p.table(name); t != nil {
		return t
	}
	t := &table{name: name, schema: schema, start: at}
	p.tables = append(p.tables, t)
	return t
}

func (f *fileImport) createTable(r *reader, p *parsed, stmt int) {
	r.accept("if", "not", "exists")
	name, schema, at, ok := r.qualifiedName()
	if !ok {
		f.ds.Errorf("RW606", f.pos(at), "write CREATE STREAMING TABLE name …", "expected the table's name")
		return
	}
	if t := p.table(name); t != nil && t.declared {
		f.ds.Errorf("RW606", f.pos(at), "one CREATE STREAMING TABLE per table", "table %s is created twice (also at %s)", name, f.pos(t.start))
		return
	}
	t := p.tableFor(name, schema, at)
	t.declared, t.stmt, t.start, t.schema = true, stmt, at, schema
	if r.peek(0).text == "(" && !r.queryStart() {
		t.hasList, t.listAt = true, r.peek(0).start
		inner, _ := r.group()
		f.columnList(inner, t)
	}
	for !r.done() {
		switch {
		case r.accept("tblproperties"):
			inner, ok := r.group()
			if !ok {
				f.ds.Errorf("RW606", f.pos(r.peek(0).start), "write TBLPROPERTIES ('key' = 'value', …)", "expected ( after TBLPROPERTIES")
				return
			}
			f.properties(inner, t)
		case r.accept("partitioned", "by"):
			t.partAt = r.peek(0).start
			inner, _ := r.group()
			for _, part := range splitCommas(inner) {
				if len(part) == 1 && part[0].isName() {
					t.partBy = append(t.partBy, part[0].name())
				}
			}
		case r.accept("flow", "replace", "where"):
			f.inlineFlow(r, t)
			return
		case r.accept("as"), r.queryStart():
			f.ds.Warnf("RW604", f.pos(t.start), "a REPLACE WHERE flow is written FLOW REPLACE WHERE pred BY NAME SELECT …",
				"streaming table %s has a query but no FLOW REPLACE WHERE: not imported", name)
			t.declared = false
			p.tables = removeTable(p.tables, t)
			return
		default:
			f.skipClause(r)
		}
	}
}

func removeTable(ts []*table, t *table) []*table {
	var out []*table
	for _, x := range ts {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

// clauseWords start a clause of CREATE STREAMING TABLE.
var clauseWords = []string{"tblproperties", "partitioned", "flow", "as", "comment", "cluster", "schedule", "trigger", "using", "location", "with", "options", "mask", "row", "select", "refresh"}

func isClauseWord(t token) bool {
	for _, w := range clauseWords {
		if t.word(w) {
			return true
		}
	}
	return false
}

// skipClause passes over a clause rwc does not carry (COMMENT, SCHEDULE,
// CLUSTER BY, …), up to the next clause, and says so.
func (f *fileImport) skipClause(r *reader) {
	start := r.peek(0)
	r.i++
	for !r.done() && !isClauseWord(r.peek(0)) {
		if r.peek(0).text == "(" {
			if j := match(r.toks, r.i); j > 0 {
				r.i = j + 1
				continue
			}
		}
		r.i++
	}
	hint := "rwc has no equivalent; it runs when rwc apply or rwc refresh runs (schedule them in CI or cron)"
	switch {
	case start.word("comment"):
		hint = "a table comment is not carried: write it as a YAML comment above the table"
	case start.word("cluster"), start.word("using"), start.word("location"), start.word("options"):
		hint = "storage layout is not carried: declare indexes: or partitioning: in the spec"
	case start.word("with"), start.word("mask"), start.word("row"):
		hint = "row filters and column masks are not carried: grant access with PostgreSQL's own privileges or row-level security"
	}
	f.ds.Warnf("RW605", f.pos(start.start), hint, "%s is not carried", strings.ToUpper(start.text))
}

func (f *fileImport) inlineFlow(r *reader, t *table) {
	fl := &flow{name: t.name, at: r.toks[r.i-3].start, predAt: r.peek(0).start}
	fl.pred = r.predicate()
	fl.byName = r.accept("by", "name")
	r.accept("as")
	fl.query, fl.end = r.toks[r.i:], r.stop
	t.flow = fl
	f.checkFlow(fl)
}

// predicate reads a REPLACE WHERE predicate's tokens: up to BY NAME or the
// query, a bracket's content whole (a subquery's SELECT is the
// predicate's).
func (r *reader) predicate() []token {
	from := r.i
	for !r.done() && !r.queryStart() && !(r.peek(0).word("by") && r.peek(1).word("name")) {
		if r.peek(0).text == "(" {
			if j := match(r.toks, r.i); j > 0 {
				r.i = j + 1
				continue
			}
		}
		r.i++
	}
	return r.toks[from:r.i]
}

func (f *fileImport) checkFlow(fl *flow) {
	if !fl.byName {
		f.ds.Warnf("RW605", f.pos(fl.at), "write BY NAME: rwc always matches the query's columns to the table's by name", "the flow has no BY NAME (Databricks requires it)")
	}
	if len(fl.query) == 0 {
		f.ds.Errorf("RW606", f.pos(fl.at), "write the flow's query after BY NAME", "the flow has no query")
	}
}

func (f *fileImport) createFlow(r *reader, p *parsed, stmt int) {
	nameTok := r.peek(0)
	name, _, _, ok := r.qualifiedName()
	if !ok {
		f.ds.Errorf("RW606", f.pos(nameTok.start), "write CREATE FLOW name AS INSERT INTO table BY NAME REPLACE WHERE pred SELECT …", "expected the flow's name")
		return
	}
	for !r.done() && !r.peek(0).word("as") {
		f.skipClause(r)
	}
	r.accept("as")
	if !r.accept("insert", "into") {
		f.ds.Warnf("RW604", f.pos(stmt), "only INSERT INTO … REPLACE WHERE flows are imported", "flow %s is not a REPLACE WHERE flow: not imported", name)
		return
	}
	r.accept("once")
	target, schema, at, ok := r.qualifiedName()
	if !ok {
		f.ds.Errorf("RW606", f.pos(at), "write INSERT INTO table BY NAME REPLACE WHERE pred SELECT …", "expected the target table's name")
		return
	}
	fl := &flow{name: name, nameAt: nameTok.start, at: stmt}
	fl.byName = r.accept("by", "name")
	if !r.accept("replace", "where") {
		f.ds.Warnf("RW604", f.pos(stmt), "a REPLACE WHERE flow is INSERT INTO table BY NAME REPLACE WHERE pred SELECT …",
			"flow %s appends to %s (no REPLACE WHERE): not imported", name, target)
		return
	}
	fl.predAt = r.peek(0).start
	fl.pred = r.predicate()
	if r.accept("by", "name") {
		fl.byName = true
	}
	fl.query, fl.end = r.toks[r.i:], r.stop
	t := p.tableFor(target, schema, at)
	if t.flow != nil {
		f.ds.Errorf("RW606", f.pos(stmt), "one REPLACE WHERE flow per target table (a Databricks limit rwc shares)",
			"table %s already has a REPLACE WHERE flow (at %s)", target, f.pos(t.flow.at))
		return
	}
	if name != target {
		f.ds.Warnf("RW613", f.pos(nameTok.start), "rwc names a flow after its table: rwc refresh "+target,
			"flow %s is imported as %s (its target's name)", name, target)
	}
	t.flow = fl
	f.checkFlow(fl)
}

func (f *fileImport) refresh(r *reader, p *parsed, stmt int) {
	name, _, at, ok := r.qualifiedName()
	if !ok {
		f.ds.Errorf("RW606", f.pos(at), "write REFRESH STREAMING TABLE name WHERE pred", "expected the table's name")
		return
	}
	if !r.accept("where") {
		f.ds.Warnf("RW604", f.pos(stmt), notCarried["refresh"], "REFRESH STREAMING TABLE %s without WHERE is not imported", name)
		return
	}
	from := r.i
	end := len(r.toks)
	if last := r.toks[end-1]; last.word("sync") || last.word("async") {
		end--
	}
	p.overrides = append(p.overrides, refreshWhere{table: name, at: stmt, pred: r.toks[from:end]})
}

func (f *fileImport) properties(toks []token, t *table) {
	for _, kv := range splitCommas(toks) {
		eq := -1
		for i, x := range kv {
			if x.text == "=" {
				eq = i
				break
			}
		}
		if eq <= 0 || eq == len(kv)-1 {
			if len(kv) > 0 {
				f.ds.Errorf("RW606", f.pos(kv[0].start), "write 'key' = 'value'", "cannot read this table property")
			}
			continue
		}
		key := propertyText(kv[:eq])
		val := strings.ToLower(propertyText(kv[eq+1:]))
		if key != "pipelines.reset.allowed" {
			f.ds.Warnf("RW605", f.pos(kv[0].start), "rwc carries pipelines.reset.allowed only", "table property %s is not carried", key)
			continue
		}
		if val != "true" && val != "false" {
			f.ds.Errorf("RW606", f.pos(kv[eq+1].start), "write 'true' or 'false'", "pipelines.reset.allowed is %q", val)
			continue
		}
		b := val == "true"
		t.reset, t.resetAt = &b, kv[0].start
	}
}

// propertyText is a property key or value: a string, or dotted words.
func propertyText(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind == tString || t.kind == tQuoted {
			b.WriteString(t.value)
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

// columnList reads (name type [NOT NULL] [COMMENT '…'], …, [CONSTRAINT n]
// PRIMARY KEY (…), CONSTRAINT … EXPECT …).
func (f *fileImport) columnList(toks []token, t *table) {
	for _, def := range splitCommas(toks) {
		if len(def) == 0 {
			continue
		}
		d := &reader{toks: def, file: f}
		if d.accept("constraint") {
			d.i++ // its name
		}
		switch {
		case d.accept("primary", "key"):
			t.pkAt = def[0].start
			inner, _ := d.group()
			for _, c := range splitCommas(inner) {
				if len(c) > 0 && c[0].isName() {
					t.pk = append(t.pk, c[0].name())
				}
			}
			continue
		case d.peek(0).word("expect"):
			f.ds.Warnf("RW605", f.pos(def[0].start), "Databricks does not run expectations on REPLACE WHERE targets; rwc's expect: runs before COMMIT (docs/spec.md)",
				"expectation is not carried")
			continue
		case d.peek(0).word("foreign") || d.peek(0).word("check") || d.peek(0).word("unique"):
			f.ds.Warnf("RW605", f.pos(def[0].start), "declare keys with primary_key: or indexes: in the spec", "table constraint is not carried")
			continue
		}
		if !def[0].isName() || len(def) < 2 {
			f.ds.Errorf("RW606", f.pos(def[0].start), "write name TYPE, e.g. order_id BIGINT", "cannot read this column definition")
			continue
		}
		c := column{name: def[0].name(), start: def[0].start, typStart: def[1].start}
		j := 1
		for j < len(def) && !def[j].word("not") && !def[j].word("comment") && !def[j].word("generated") && !def[j].word("default") &&
			!def[j].word("constraint") && !def[j].word("primary") && !def[j].word("mask") {
			j++
		}
		c.typ = f.text(def[1:j])
		for k := j; k < len(def); k++ {
			switch {
			case def[k].word("not") && k+1 < len(def) && def[k+1].word("null"):
				c.notNull = true
				k++
			case def[k].word("primary") && k+1 < len(def) && def[k+1].word("key"):
				t.pk, t.pkAt = append(t.pk, c.name), def[k].start
				k++
			case def[k].word("comment") && k+1 < len(def):
				k++
			default:
				f.ds.Warnf("RW605", f.pos(def[k].start), "rwc's columns are a name and a type", "%s on column %s is not carried", strings.ToUpper(def[k].text), c.name)
				k = len(def)
			}
		}
		t.columns = append(t.columns, c)
	}
}

func (f *fileImport) pos(off int) diag.Pos {
	l, c := f.lines.at(off)
	return diag.Pos{File: f.name, Line: l, Column: c}
}

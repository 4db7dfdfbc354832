package databricks

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Column is a target column: its name and PostgreSQL type.
type Column struct {
	Name string
	Type string
}

// Describer returns the output columns of a PostgreSQL query, typed by a
// database (run.DescribeQuery); import uses it for a table declared
// without a column list.
type Describer func(query string) ([]Column, error)

// Options steer an import.
type Options struct {
	// Pipeline names the one pipeline every SQL file goes into; "" makes
	// one pipeline per file, named after it.
	Pipeline string
	// Schema is the target schema; "" takes it from the tables' qualified
	// names, else public.
	Schema string
	// Describe types columns from a database; nil when there is none.
	Describe Describer
	// At resolves current_date() in one-off overrides, which a backfill
	// file must not depend on; Zone is current_date()'s time zone.
	At   time.Time
	Zone *time.Location
	// Flows are flows already in the spec directory, by name: overrides
	// for them are typed by their columns.
	Flows map[string][]Column
}

// Input is one file to import: its name as shown in diagnostics, and its
// content. Names ending in .json are replace_where_overrides; others are
// pipeline SQL.
type Input struct {
	Name string
	Src  []byte
}

// File is one file import writes, relative to the spec directory.
type File struct {
	Path    string
	Content []byte
}

// Result is what an import writes and what it has to say. With errors in
// Diagnostics, Files is empty: nothing is written.
type Result struct {
	Files       []File
	Diagnostics diag.List
}

// fileImport is the import of one SQL file.
type fileImport struct {
	name  string
	src   string
	lines *lines
	ds    diag.List
}

func newFileImport(name string, src []byte) *fileImport {
	s := string(src)
	return &fileImport{name: name, src: s, lines: newLines(s)}
}

// importedFlow is a flow ready to be written, and what override
// predicates of it are typed by.
type importedFlow struct {
	table   string
	columns []Column
	types   map[string]pgtype.Type
}

// Import reads Databricks pipeline SQL and replace_where_overrides files
// and returns the spec and backfill files they make.
func Import(inputs []Input, opt Options) Result {
	var res Result
	var docs []*pipelineDoc
	flows := map[string]*importedFlow{}
	for name, cols := range opt.Flows {
		flows[name] = &importedFlow{table: name, columns: cols, types: typesOf(cols)}
	}
	var overrides []pendingOverride
	for _, in := range inputs {
		if strings.HasSuffix(strings.ToLower(in.Name), ".py") {
			res.Diagnostics.Errorf("RW604", diag.Pos{File: in.Name}, "write the flow in SQL (CREATE STREAMING TABLE … FLOW REPLACE WHERE … BY NAME SELECT …) and import that",
				"Python pipelines are not imported")
			continue
		}
		if strings.HasSuffix(strings.ToLower(in.Name), ".json") {
			ov, ds := readOverrides(in)
			res.Diagnostics = append(res.Diagnostics, ds...)
			overrides = append(overrides, ov...)
			continue
		}
		f := newFileImport(in.Name, in.Src)
		p := &parsed{}
		toks := lex(f.src)
		if at, deep := tooDeep(toks); deep {
			res.Diagnostics.Errorf("RW606", f.pos(at), "a pipeline's SQL nests a few brackets deep: split the expression, or check that this is the file you meant",
				"brackets nest deeper than %d here", maxNesting)
			continue
		}
		for _, st := range splitStatements(toks, len(f.src)) {
			f.statement(st, p)
		}
		name := opt.Pipeline
		if name == "" {
			name = pipelineName(in.Name)
		}
		doc := docFor(&docs, name)
		doc.sources = append(doc.sources, in.Name)
		for _, t := range p.tables {
			if fl := f.table(t, opt, doc); fl != nil {
				flows[fl.table] = fl
			}
		}
		if len(p.tables) == 0 && len(p.overrides) == 0 && !f.ds.HasErrors() {
			f.ds.Warnf("RW604", diag.Pos{File: in.Name}, "import reads CREATE STREAMING TABLE … FLOW REPLACE WHERE, CREATE FLOW … REPLACE WHERE and REFRESH STREAMING TABLE … WHERE",
				"no REPLACE WHERE flow or override in this file")
		}
		for _, o := range p.overrides {
			overrides = append(overrides, pendingOverride{flow: o.table, file: f, toks: o.pred, at: o.at, origin: fmt.Sprintf("%s:%d: REFRESH STREAMING TABLE %s WHERE", in.Name, f.pos(o.at).Line, o.table)})
		}
		res.Diagnostics = append(res.Diagnostics, f.ds...)
	}
	for _, doc := range docs {
		if len(doc.tables) == 0 {
			continue
		}
		b, ds := doc.render()
		res.Diagnostics = append(res.Diagnostics, ds...)
		res.Files = append(res.Files, File{Path: doc.name + ".yaml", Content: b})
	}
	files, ds := backfillFiles(overrides, flows, opt)
	res.Files = append(res.Files, files...)
	res.Diagnostics = append(res.Diagnostics, ds...)
	res.Diagnostics.Sort()
	if res.Diagnostics.HasErrors() {
		res.Files = nil
	}
	return res
}

// maxNesting bounds how deep the brackets of a file nest: import walks
// calls and groups recursively, and so do PostgreSQL's parser and CEL's.
const maxNesting = 256

// tooDeep finds the first bracket past maxNesting.
func tooDeep(toks []token) (int, bool) {
	depth := 0
	for _, t := range toks {
		switch {
		case t.kind != tOp:
		case t.text == "(" || t.text == "[":
			if depth++; depth > maxNesting {
				return t.start, true
			}
		case t.text == ")" || t.text == "]":
			depth = max(depth-1, 0)
		}
	}
	return 0, false
}

func typesOf(cols []Column) map[string]pgtype.Type {
	m := map[string]pgtype.Type{}
	for _, c := range cols {
		if t, err := pgtype.Parse(c.Type); err == nil {
			m[c.Name] = t
		}
	}
	return m
}

var notName = regexp.MustCompile(`[^a-z0-9_]+`)

// pipelineName makes a pipeline name ([a-z][a-z0-9_]*) of a file name.
func pipelineName(file string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(file, `\`, "/")), path.Ext(file))
	s := strings.Trim(notName.ReplaceAllString(strings.ToLower(base), "_"), "_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "p_" + s
	}
	return s
}

// table turns one parsed table into a spec table of doc.
func (f *fileImport) table(t *table, opt Options, doc *pipelineDoc) *importedFlow {
	switch {
	case t.flow == nil:
		f.ds.Errorf("RW610", f.pos(t.start), "give it a flow: FLOW REPLACE WHERE pred BY NAME SELECT …, or CREATE FLOW … INSERT INTO "+t.name+" BY NAME REPLACE WHERE …",
			"table %s has no REPLACE WHERE flow", t.name)
		return nil
	case !t.declared:
		f.ds.Errorf("RW610", f.pos(t.flow.at), "add CREATE STREAMING TABLE "+t.name+"; a REPLACE WHERE target is created by its pipeline",
			"flow %s writes table %s, which the file does not create", t.flow.name, t.name)
		return nil
	}
	if len(t.flow.query) == 0 {
		return nil // reported by checkFlow
	}
	if !f.rwcNames(t) {
		return nil
	}
	if _, dup := opt.Flows[t.name]; dup {
		f.ds.Errorf("RW606", f.pos(t.start), "rename the table, or import into another --out", "a flow named %s is already in the spec directory", t.name)
		return nil
	}
	schema := opt.Schema
	if schema == "" {
		schema = t.schema
	}
	if schema != "" && doc.schema != "" && schema != doc.schema {
		f.ds.Errorf("RW606", f.pos(t.start), "a pipeline has one schema: import the tables of each schema with its own --pipeline",
			"table %s is in schema %s, the pipeline's other tables in %s", t.name, schema, doc.schema)
		return nil
	}
	if schema != "" {
		doc.schema = schema
	}
	pgQuery, qb := f.translateQuery(t.flow.query, t.flow.end)
	if _, se := query.Analyze(pgQuery); se != nil && se.Offset >= 0 && len(qb.from) > 0 {
		f.ds.Warnf("RW609", f.pos(qb.source(se.Offset)), "review the query: rwc lint reports it in the spec until it is PostgreSQL",
			"the query is not PostgreSQL after translation: %s", se.Message)
	}
	cols := f.columns(t, pgQuery, opt)
	colsAt := f.pos(t.flow.query[0].start)
	if t.hasList {
		colsAt = f.pos(t.listAt)
	}
	if cols == nil || !f.rwcColumnNames(cols, colsAt) {
		return nil
	}
	types := typesOf(cols)
	cel, ds := importPredicate(t.flow.pred, types, f.pos)
	f.ds = append(f.ds, ds...)
	if ds.HasErrors() {
		return nil
	}
	if !f.checkPredicate(cel, cols, f.pos(t.flow.predAt), false) {
		return nil
	}
	st := &specTable{name: t.name, where: cel, columns: cols, query: pgQuery, pk: t.pk}
	if t.reset != nil && !*t.reset {
		st.resetFalse = true
	}
	if len(t.partBy) > 0 {
		if ty, ok := types[t.partBy[0]]; ok && len(t.partBy) == 1 && ty.Family == pgtype.Date {
			st.partitioning = t.partBy[0]
		} else {
			f.ds.Warnf("RW605", f.pos(t.partAt), "rwc partitions by one date column (partitioning: {by: COL, interval: day})", "PARTITIONED BY is not carried")
		}
	}
	doc.tables = append(doc.tables, st)
	return &importedFlow{table: t.name, columns: cols, types: types}
}

var rwcName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ValidName is spec's rule for pipeline, table and column names (RW104).
func ValidName(s string) bool { return len(s) <= 63 && rwcName.MatchString(s) }

// rwcNames refuses a table whose name, schema or declared columns are no
// rwc names: the spec would not lint, and the table's name is also a file
// name (backfills/<date>-<table>.yaml), which a quoted `../x` would lead
// out of the spec directory.
func (f *fileImport) rwcNames(t *table) bool {
	ok := f.rwcName("table", t.name, t.start)
	if t.schema != "" {
		ok = f.rwcName("schema", t.schema, t.start) && ok
	}
	for _, c := range t.columns {
		ok = f.rwcName("column", c.name, c.start) && ok
	}
	return ok
}

func (f *fileImport) rwcName(what, name string, at int) bool {
	if ValidName(name) {
		return true
	}
	f.ds.Errorf("RW606", f.pos(at), "rename it in the SQL: a letter or _, then lower-case letters, digits or _, at most 63 bytes",
		"%s name %q is not an rwc name", what, name)
	return false
}

// maxColumns is PostgreSQL's limit of columns in a table.
const maxColumns = 1600

// rwcColumnNames refuses columns whose names are no rwc names (an alias
// "Order Id" typed from the database), or twice in the table, or more
// columns than a table can have.
func (f *fileImport) rwcColumnNames(cols []Column, at diag.Pos) bool {
	ok := true
	if len(cols) > maxColumns {
		f.ds.Errorf("RW606", at, "split the table", "%d columns: PostgreSQL's tables have at most %d", len(cols), maxColumns)
		return false
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			f.ds.Errorf("RW606", at, "give each column its own name", "column %s is there twice", c.Name)
			ok = false
		}
		seen[c.Name] = true
		if !ValidName(c.Name) {
			f.ds.Errorf("RW606", at, "alias the column in the query: a letter or _, then lower-case letters, digits or _, at most 63 bytes",
				"the query's column %q is not an rwc name", c.Name)
			ok = false
		}
	}
	return ok
}

// checkPredicate compiles the CEL against the columns, reporting what the
// predicate language rejects at the predicate's position.
func (f *fileImport) checkPredicate(cel string, cols []Column, at diag.Pos, override bool) bool {
	pcols := make([]predicate.Column, 0, len(cols))
	for _, c := range cols {
		if t, err := pgtype.Parse(c.Type); err == nil {
			pcols = append(pcols, predicate.Column{Name: c.Name, Type: t})
		}
	}
	p, issues := predicate.Compile(cel, pcols)
	for _, is := range issues {
		f.ds.Errorf("RW601", at, is.Hint, "the predicate in CEL (%s) is not a window predicate: %s", cel, is.Message)
	}
	if len(issues) == 0 && !override && p.Determinism == predicate.NonDeterministic {
		// Databricks falls back to a full recompute; rwc refuses (RW211):
		// the DELETE and the INSERT would each draw rand() anew.
		f.ds.Errorf("RW601", at, "window on a column instead; rwc refuses rand() in a flow's predicate (RW211)", "the predicate %s is not deterministic", cel)
		return false
	}
	return len(issues) == 0
}

// columns are the target's columns: from its column list, else from the
// database, else an error saying they are needed.
func (f *fileImport) columns(t *table, pgQuery string, opt Options) []Column {
	if t.hasList {
		var cols []Column
		ok := true
		for _, c := range t.columns {
			ty, err := pgTypeOf(c.typ)
			if err != nil {
				f.ds.Errorf("RW608", f.pos(c.typStart), "declare a PostgreSQL-compatible type (docs/databricks.md has the table)", "column %s: %v", c.name, err)
				ok = false
				continue
			}
			cols = append(cols, Column{Name: c.name, Type: ty.Canonical})
		}
		if len(cols) == 0 && ok {
			f.ds.Errorf("RW607", f.pos(t.listAt), "list the table's columns with their types", "the column list is empty")
			return nil
		}
		if !ok {
			return nil
		}
		return cols
	}
	if opt.Describe == nil {
		f.ds.Errorf("RW607", f.pos(t.start), "declare the columns: CREATE STREAMING TABLE "+t.name+" (col TYPE, …), or pass --dsn to read them from the database where the sources exist",
			"table %s has no column list, and no database was named to type the query's columns", t.name)
		return nil
	}
	cols, err := opt.Describe(pgQuery)
	if err != nil {
		f.ds.Errorf("RW607", f.pos(t.flow.query[0].start), "create the sources in the database first, or declare the columns: CREATE STREAMING TABLE "+t.name+" (col TYPE, …)",
			"cannot read the query's column types from the database: %v", err)
		return nil
	}
	return cols
}

// pipelineDoc is one spec file being built.
type pipelineDoc struct {
	name    string
	schema  string
	sources []string
	tables  []*specTable
}

func docFor(docs *[]*pipelineDoc, name string) *pipelineDoc {
	for _, d := range *docs {
		if d.name == name {
			return d
		}
	}
	d := &pipelineDoc{name: name}
	*docs = append(*docs, d)
	return d
}

type specTable struct {
	name         string
	where        string
	resetFalse   bool
	columns      []Column
	pk           []string
	partitioning string
	query        string
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func pair(m *yaml.Node, k string, v *yaml.Node) { m.Content = append(m.Content, scalar(k), v) }

func flowList(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, it := range items {
		n.Content = append(n.Content, scalar(it))
	}
	return n
}

// render writes the spec in rwc's canonical format (rwc fmt leaves it).
func (d *pipelineDoc) render() ([]byte, diag.List) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	pair(root, "pipeline", scalar(d.name))
	root.Content[0].HeadComment = "Imported by rwc import from " + strings.Join(d.sources, ", ") + "."
	if d.schema != "" && d.schema != "public" {
		pair(root, "schema", scalar(d.schema))
	}
	tables := &yaml.Node{Kind: yaml.MappingNode}
	for _, t := range d.tables {
		m := &yaml.Node{Kind: yaml.MappingNode}
		pair(m, "replace_where", scalar(t.where))
		if t.resetFalse {
			props := &yaml.Node{Kind: yaml.MappingNode}
			pair(props, "reset_allowed", scalar("false"))
			pair(m, "properties", props)
		}
		cols := &yaml.Node{Kind: yaml.MappingNode}
		for _, c := range t.columns {
			pair(cols, c.Name, scalar(c.Type))
		}
		pair(m, "columns", cols)
		if len(t.pk) > 0 {
			pair(m, "primary_key", flowList(t.pk))
		}
		if t.partitioning != "" {
			part := &yaml.Node{Kind: yaml.MappingNode}
			pair(part, "by", scalar(t.partitioning))
			pair(part, "interval", scalar("day"))
			pair(m, "partitioning", part)
		}
		q := scalar(t.query + "\n")
		q.Style = yaml.LiteralStyle
		pair(m, "query", q)
		pair(tables, t.name, m)
	}
	pair(root, "tables", tables)
	return encode(root, d.name+".yaml", false)
}

func encode(root *yaml.Node, file string, backfill bool) ([]byte, diag.List) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	var ds diag.List
	if err := enc.Encode(root); err != nil {
		ds.Errorf("RW606", diag.Pos{File: file}, "", "internal: cannot write the spec: %v", err)
		return nil, ds
	}
	_ = enc.Close()
	out, err := spec.Format(b.Bytes(), backfill)
	if err != nil {
		ds.Errorf("RW606", diag.Pos{File: file}, "", "internal: cannot format the spec: %v", err)
		return nil, ds
	}
	return out, nil
}

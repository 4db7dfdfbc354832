package databricks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// ExportResult is what rwc export writes (relative to its output
// directory) and what does not carry to Databricks, positioned in the specs.
type ExportResult struct {
	Files      []File
	NotCarried diag.List
}

// Export writes each pipeline as Lakeflow pipeline SQL (one CREATE OR
// REFRESH STREAMING TABLE … FLOW REPLACE WHERE … BY NAME per flow) and each
// backfill file as the replace_where_overrides of a pipeline update.
// The project must load and lint clean.
func Export(p *spec.Project) (ExportResult, error) {
	var res ExportResult
	for _, pl := range p.Pipelines {
		var b strings.Builder
		b.WriteString(sqlComment(fmt.Sprintf("Exported by rwc export from %s (pipeline %s).", pl.File, pl.Name)))
		for _, t := range pl.Tables {
			stmt, nc, err := exportTable(t)
			if err != nil {
				return ExportResult{}, err
			}
			b.WriteString("\n")
			for _, d := range nc {
				b.WriteString(sqlComment(fmt.Sprintf("rwc: not carried (%s): %s", d.Pos, d.Message)))
			}
			b.WriteString(stmt)
			res.NotCarried = append(res.NotCarried, nc...)
		}
		res.Files = append(res.Files, File{Path: pl.Name + ".sql", Content: []byte(b.String())})
	}
	for _, bf := range p.Backfills {
		f, nc, err := exportBackfill(p, bf)
		if err != nil {
			return ExportResult{}, err
		}
		res.Files = append(res.Files, f)
		res.NotCarried = append(res.NotCarried, nc...)
	}
	res.NotCarried.Sort()
	return res, nil
}

// sqlComment is a -- line comment of s, its line breaks and other
// control characters escaped: a spec file's name may hold a newline, and
// what followed it would be SQL.
func sqlComment(s string) string {
	return "-- " + strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return '?'
		}
		return r
	}, s) + "\n"
}

func columnsOf(t *spec.Table) []predicate.Column {
	cols := make([]predicate.Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = predicate.Column{Name: c.Name, Type: c.Type}
	}
	return cols
}

func compileFor(t *spec.Table, text spec.Text) (*predicate.Predicate, error) {
	p, issues := predicate.Compile(text.Value, columnsOf(t))
	if len(issues) > 0 {
		return nil, fmt.Errorf("%s: %s (run rwc lint)", text.At(issues[0].At.Line, issues[0].At.Column), issues[0].Message)
	}
	return p, nil
}

func exportTable(t *spec.Table) (string, diag.List, error) {
	var nc diag.List
	p, err := compileFor(t, t.ReplaceWhere)
	if err != nil {
		return "", nil, err
	}
	pred, err := ExportPredicate(p)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	name := sparkIdent(t.Name)
	if t.Pipeline.Schema != "" && t.Pipeline.Schema != "public" {
		name = sparkIdent(t.Pipeline.Schema) + "." + name
	}
	fmt.Fprintf(&b, "CREATE OR REFRESH STREAMING TABLE %s (\n", name)
	pk := map[string]bool{}
	if t.PrimaryKey != nil {
		for _, c := range t.PrimaryKey.Columns {
			pk[c] = true
		}
	}
	for i, c := range t.Columns {
		st, ok := sparkTypeOf(c.Type)
		if !ok {
			if st == "" {
				st = "STRING"
			}
			nc.Warnf("RW620", c.TypePos, "declare the column with a type Spark has, or convert it in the query", "column %s's type %s becomes %s on Databricks", c.Name, c.Type.Canonical, st)
		}
		line := "  " + sparkIdent(c.Name) + " " + st
		if pk[c.Name] {
			line += " NOT NULL"
		}
		if i < len(t.Columns)-1 || t.PrimaryKey != nil {
			line += ","
		}
		b.WriteString(line + "\n")
	}
	if t.PrimaryKey != nil {
		fmt.Fprintf(&b, "  CONSTRAINT %s PRIMARY KEY (%s)\n", sparkIdent(t.Name+"_pk"), sparkList(t.PrimaryKey.Columns))
	}
	b.WriteString(")\n")
	if pt := t.Partitioning; pt != nil {
		fmt.Fprintf(&b, "PARTITIONED BY (%s)\n", sparkIdent(pt.By))
		if pt.Interval != "day" {
			nc.Warnf("RW620", pt.IntervalPos, "Delta partitions by each value of the column: one partition per day", "partitioning interval %s is not carried", pt.Interval)
		}
	}
	if !t.ResetAllowed {
		b.WriteString("TBLPROPERTIES ('pipelines.reset.allowed' = 'false')\n")
	}
	fmt.Fprintf(&b, "FLOW REPLACE WHERE %s BY NAME\n", pred)
	q, qnc := exportQuery(t)
	nc = append(nc, qnc...)
	// A comment on the query's last line would swallow the ;.
	if lines := strings.Split(q, "\n"); strings.Contains(lines[len(lines)-1], "--") {
		q += "\n"
	}
	b.WriteString(q + ";\n")
	if t.PartitionBy != "" && t.Partitioning == nil {
		nc.Warnf("RW620", t.PartitionPos, "Databricks chooses incremental granularity itself", "partition_by is not carried")
	}
	for _, ix := range t.Indexes {
		nc.Warnf("RW620", ix.Pos, "Delta tables have no indexes: use CLUSTER BY on Databricks", "index on (%s) is not carried", strings.Join(ix.Columns, ", "))
	}
	return b.String(), nc, nil
}

func sparkList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = sparkIdent(n)
	}
	return strings.Join(out, ", ")
}

// exportQuery writes the PostgreSQL query as Spark SQL: double-quoted
// names backquoted, strings in Spark's escaping. What Spark SQL lacks is
// kept and listed.
func exportQuery(t *spec.Table) (string, diag.List) {
	var nc diag.List
	src := strings.TrimRight(t.Query.Value, "\n ")
	toks := lexPG(src)
	var b strings.Builder
	last := 0
	for i, tk := range toks {
		b.WriteString(src[last:tk.start])
		last = tk.end
		switch {
		case tk.kind == tQuoted:
			b.WriteString(sparkIdent(tk.value))
		case eString(toks, i+1):
			// The E of E'…': the string after it is written decoded.
		case tk.kind == tString:
			if eString(toks, i) {
				nc.Warnf("RW620", t.Query.AtOffset(tk.start), "write the string without escapes", "an E'…' string is PostgreSQL's")
			}
			b.WriteString(sparkString(tk.value))
		case tk.word("distinct") && i+1 < len(toks) && toks[i+1].word("on"):
			nc.Warnf("RW620", t.Query.AtOffset(tk.start), "rewrite it with a window function: row_number() OVER (PARTITION BY …) = 1", "DISTINCT ON is PostgreSQL's: Spark SQL has none")
			b.WriteString(tk.text)
		case tk.kind == tOp && (tk.text == "~" || tk.text == "~*" || tk.text == "!~"):
			nc.Warnf("RW620", t.Query.AtOffset(tk.start), "use rlike / regexp on Databricks", "the regular expression operator %s is PostgreSQL's", tk.text)
			b.WriteString(tk.text)
		default:
			b.WriteString(tk.text)
		}
	}
	b.WriteString(src[last:])
	return b.String(), nc
}

// eString says whether toks[i] is an E'…' string.
func eString(toks []token, i int) bool {
	return i > 0 && i < len(toks) && toks[i].kind == tString && strings.HasPrefix(toks[i].text, "'") &&
		toks[i-1].end == toks[i].start && toks[i-1].word("e")
}

// overridesBody is a pipeline update's request body with the overrides.
type overridesBody struct {
	ReplaceWhereOverrides []override `json:"replace_where_overrides"`
	RefreshSelection      []string   `json:"refresh_selection"`
}

func exportBackfill(p *spec.Project, bf *spec.Backfill) (File, diag.List, error) {
	var nc diag.List
	t := p.Flow(bf.Flow)
	if t == nil {
		return File{}, nil, fmt.Errorf("%s: backfill of unknown flow %s (run rwc lint)", bf.FlowPos, bf.Flow)
	}
	pr, err := compileFor(t, bf.Where)
	if err != nil {
		return File{}, nil, err
	}
	spark, err := ExportPredicate(pr)
	if err != nil {
		return File{}, nil, err
	}
	if bf.BatchDays > 0 {
		nc.Warnf("RW620", bf.BatchPos, "Databricks runs an override as one update", "batch: %dd is not carried", bf.BatchDays)
	}
	body := overridesBody{ReplaceWhereOverrides: []override{{FlowName: t.Name, PredicateOverride: spark}}, RefreshSelection: []string{t.Name}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(body); err != nil {
		return File{}, nil, err
	}
	name := strings.TrimSuffix(path.Base(bf.File), path.Ext(bf.File)) + ".json"
	return File{Path: spec.BackfillDir + "/" + name, Content: buf.Bytes()}, nc, nil
}

package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

// BackfillDir is where backfill files live, relative to the specs directory.
const BackfillDir = "backfills"

var allowedKeys = map[string][]string{
	"top level": PipelineKeys, "table": TableKeys, "properties": PropertyKeys, "index": IndexKeys,
	"partitioning": PartitioningKeys, "distribution": DistributionKeys, "expectation": ExpectationKeys, "rows": RowsKeys, "relationships": RelationshipKeys,
}

// Load reads every pipeline (dir/*.yaml) and backfill (dir/backfills/*.yaml)
// from fsys. File names in diagnostics are display+"/"+relative path, so a
// caller passes the directory as the user named it. It never stops at the
// first problem: a user fixes a whole file in one round.
func Load(fsys fs.FS, display string) (*Project, diag.List) {
	p := &Project{Dir: display, Sources: map[string][]string{}}
	var ds diag.List
	// fs.Glob is silent about a directory it cannot read.
	for _, d := range []string{".", BackfillDir} {
		if _, err := fs.Stat(fsys, d); err != nil && (d == "." || !errors.Is(err, fs.ErrNotExist)) {
			ds = append(ds, unreadable(path.Join(display, d), err))
			if d == "." {
				return p, ds
			}
		}
	}
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		ds.Errorf("RW100", diag.Pos{File: display}, "", "cannot list pipelines: %v", err)
		return p, ds
	}
	yml, _ := fs.Glob(fsys, "*.yml")
	for _, f := range yml {
		ds.Warnf("RW100", diag.Pos{File: path.Join(display, f)}, "rename it to "+strings.TrimSuffix(f, ".yml")+".yaml", "file ignored: pipelines end in .yaml")
	}
	for _, f := range files {
		pl, fd := loadPipeline(p, fsys, f, path.Join(display, f))
		ds = append(ds, fd...)
		if pl != nil {
			p.Pipelines = append(p.Pipelines, pl)
		}
	}
	bfiles, _ := fs.Glob(fsys, BackfillDir+"/*.yaml")
	for _, f := range bfiles {
		bf, fd := loadBackfill(p, fsys, f, path.Join(display, f))
		ds = append(ds, fd...)
		if bf != nil {
			p.Backfills = append(p.Backfills, bf)
		}
	}
	ds = append(ds, p.crossChecks()...)
	ds.Sort()
	return p, ds
}

// parse reads one YAML file into its document node, reporting YAML syntax
// errors and duplicate keys (which yaml.v3's node API keeps silently).
func parse(fsys fs.FS, name, file string) (*yaml.Node, []string, diag.List) {
	var ds diag.List
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, nil, append(ds, unreadable(file, err))
	}
	if d := encodingProblem(raw, file); d != nil {
		return nil, nil, append(ds, *d)
	}
	src := lineBreak.Split(string(raw), -1)
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		line := 0
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(msg[len(m[0]):], " ")
		}
		if strings.Contains(err.Error(), "EOF") {
			msg = "the file is empty"
		}
		ds.Errorf("RW100", diag.Pos{File: file, Line: line, Column: min(line, 1)}, "fix the YAML syntax (indentation, a missing ':' or an unclosed quote)", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
		return nil, src, ds
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		ds.Errorf("RW100", diag.Pos{File: file, Line: extra.Line, Column: extra.Column}, "keep one pipeline per file", "the file holds more than one YAML document")
	}
	if a := findAlias(&doc); a != nil {
		ds.Errorf("RW100", diag.Pos{File: file, Line: a.Line, Column: a.Column}, "write the value out where it is used",
			"YAML aliases (*%s) are not supported in rwc files: every value must be visible where it applies", a.Value)
		return nil, src, ds
	}
	duplicateKeys(&doc, file, &ds)
	return &doc, src, ds
}

// unreadable is the diagnostic for a spec path rwc cannot or will not
// read (see DirFS); it quotes nothing of the path.
func unreadable(file string, err error) diag.Diagnostic {
	if !utf8.ValidString(file) {
		return diag.Diagnostic{Code: "RW121", Severity: diag.Error, Pos: diag.Pos{File: strings.ToValidUTF8(file, "?")},
			Message: "the file's name is not valid UTF-8", Hint: "rename the file: spec names are UTF-8, like their content"}
	}
	var refused *Refused
	if errors.As(err, &refused) {
		return diag.Diagnostic{Code: "RW120", Severity: diag.Error, Pos: diag.Pos{File: file}, Message: file + " " + refused.Reason, Hint: refused.Hint}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is the diagnostic's already
	}
	d := diag.Diagnostic{Code: "RW100", Severity: diag.Error, Pos: diag.Pos{File: file}, Message: fmt.Sprintf("cannot read: %v", err)}
	if errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links") {
		d.Hint = "a symbolic link on the way leads in a loop: point it at the file itself"
	}
	return d
}

// lineBreak is YAML's idea of a line break, so line numbers agree with it.
var lineBreak = regexp.MustCompile(`\r\n|\r|\n`)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+):`)

// findAlias returns the first alias node. Aliases can make a document
// refer to itself, and a spec should read the same as it is written.
func findAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, c := range n.Content {
		if a := findAlias(c); a != nil {
			return a
		}
	}
	return nil
}

func duplicateKeys(n *yaml.Node, file string, ds *diag.List) {
	if n.Kind == yaml.MappingNode {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, ok := seen[k.Value]; ok {
				ds.Errorf("RW105", diag.Pos{File: file, Line: k.Line, Column: k.Column},
					fmt.Sprintf("remove one of them; the first is at line %d", first.Line), "duplicate key %q", k.Value)
			} else {
				seen[k.Value] = k
			}
		}
	}
	for _, c := range n.Content {
		duplicateKeys(c, file, ds)
	}
}

func loadPipeline(p *Project, fsys fs.FS, name, file string) (*Pipeline, diag.List) {
	doc, src, ds := parse(fsys, name, file)
	p.Sources[file] = src
	if doc == nil || ds.HasErrors() {
		return nil, ds
	}
	sch, err := pipelineSchema()
	if err != nil {
		ds.Errorf("RW100", diag.Pos{File: file}, "", "internal: %v", err)
		return nil, ds
	}
	sd, bad := validate(sch, doc, file, allowedKeys)
	ds = append(ds, sd...)
	root := doc.Content[0]
	tables := valueOf(root, keyNode(root, "tables"))
	if root.Kind != yaml.MappingNode || tables == nil || tables.Kind != yaml.MappingNode || brokenAt(bad, "tables") {
		return nil, ds
	}
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	pl := &Pipeline{File: file, Schema: "public", Pos: at(root)}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "pipeline":
			pl.Name = v.Value
			pl.Pos = at(v)
		case "schema":
			pl.Schema = v.Value
			ds = append(ds, checkSchema(v.Value, at(v))...)
		case "tables":
			for j := 0; j+1 < len(v.Content); j += 2 {
				if brokenAt(bad, "tables", v.Content[j].Value) {
					continue
				}
				t, td := loadTable(v.Content[j], v.Content[j+1], src, file)
				ds = append(ds, td...)
				t.Pipeline = pl
				pl.Tables = append(pl.Tables, t)
			}
		}
	}
	for _, t := range pl.Tables {
		ds = append(ds, checkSelfRelationships(t)...)
	}
	return pl, ds
}

func loadTable(k, v *yaml.Node, src []string, file string) (*Table, diag.List) {
	var ds diag.List
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	t := &Table{Name: k.Value, Pos: at(k), ResetAllowed: true, Capture: CaptureFingerprints}
	for i := 0; i+1 < len(v.Content); i += 2 {
		key, val := v.Content[i], v.Content[i+1]
		switch key.Value {
		case "replace_where":
			t.ReplaceWhere = newText(src, file, val)
		case "partition_by":
			t.PartitionBy, t.PartitionPos = val.Value, at(val)
		case "properties":
			if n := keyNode(val, "reset_allowed"); n != nil {
				t.ResetAllowed = isTrue(valueOf(val, n))
			}
		case "query":
			t.Query = newText(src, file, val)
			if strings.TrimSpace(val.Value) == "" {
				ds.Errorf("RW107", at(val), "write the SELECT that computes the table", "table %s has an empty query", t.Name)
			}
		case "columns":
			for j := 0; j+1 < len(val.Content); j += 2 {
				cn, ct := val.Content[j], val.Content[j+1]
				typ, err := pgtype.Parse(ct.Value)
				if err != nil {
					ds = append(ds, typeError(cn.Value, at(ct), err))
				}
				t.Columns = append(t.Columns, Column{Name: cn.Value, Type: typ, Pos: at(cn), TypePos: at(ct)})
			}
		case "indexes":
			t.Indexes, t.IndexesDeclared, t.IndexesPos = loadIndexes(val, src, file), true, at(key)
		case "primary_key":
			k := loadKey(val, file)
			t.PrimaryKey = &k
		case "partitioning":
			t.Partitioning = loadPartitioning(key, val, file)
		case "distribution":
			t.Distribution = loadDistribution(key, val, file)
		case "capture":
			t.Capture, t.CapturePos = val.Value, at(val)
		case "maintain":
			t.Maintain, t.MaintainPos = val.Value, at(val)
		case "expect":
			var ed diag.List
			t.Expect, ed = loadExpectations(val, src, file)
			ds = append(ds, ed...)
		}
	}
	ds = append(ds, checkColumns(t)...)
	ds = append(ds, checkKeys(t)...)
	for _, e := range t.Expect {
		ds = append(ds, checkExpectColumns(t, e)...)
	}
	if t.PartitionBy != "" && t.Column(t.PartitionBy) == nil {
		ds.Errorf("RW108", t.PartitionPos, "partition_by names one of the table's columns: "+columnNames(t),
			"partition_by %q is not a column of %s", t.PartitionBy, t.Name)
	}
	return t, ds
}

// typeError is RW114 for a modifier out of PostgreSQL's range, whose hint
// says what to write instead, and RW106 for any other bad type.
func typeError(column string, at diag.Pos, err error) diag.Diagnostic {
	d := diag.Diagnostic{Code: "RW106", Severity: diag.Error, Pos: at, Message: fmt.Sprintf("column %s: %v", column, err),
		Hint: "known types: " + strings.Join(pgtype.Known(), ", ")}
	var re *pgtype.RangeError
	if errors.As(err, &re) {
		d.Code, d.Hint = "RW114", re.Hint()
	}
	return d
}

func columnNames(t *Table) string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func loadBackfill(p *Project, fsys fs.FS, name, file string) (*Backfill, diag.List) {
	doc, src, ds := parse(fsys, name, file)
	p.Sources[file] = src
	if doc == nil || ds.HasErrors() {
		return nil, ds
	}
	sch, err := backfillSchema()
	if err != nil {
		ds.Errorf("RW100", diag.Pos{File: file}, "", "internal: %v", err)
		return nil, ds
	}
	if sd, _ := validate(sch, doc, file, map[string][]string{"top level": BackfillKeys}); len(sd) > 0 {
		return nil, append(ds, sd...)
	}
	root := doc.Content[0]
	b := &Backfill{File: file}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "backfill":
			b.Flow, b.FlowPos = v.Value, diag.Pos{File: file, Line: v.Line, Column: v.Column}
		case "where":
			b.Where = newText(src, file, v)
		case "reason":
			b.Reason = v.Value
			ds = append(ds, checkStorable("reason", newText(src, file, v))...)
		case "batch":
			b.BatchDays, _ = ParseBatch(v.Value)
			b.BatchPos = diag.Pos{File: file, Line: v.Line, Column: v.Column}
		case "allow_loss":
			b.AllowLoss = isTrue(v)
		}
	}
	if strings.TrimSpace(b.Reason) == "" {
		ds.Errorf("RW103", diag.Pos{File: file, Line: root.Line, Column: root.Column}, requiredHint("reason"), "the backfill's reason is empty")
	}
	return b, ds
}

// crossChecks are the rules that span files: unique pipeline names, one flow
// per target, and backfills that name an existing flow.
func (p *Project) crossChecks() diag.List {
	var ds diag.List
	pipelines := map[string]*Pipeline{}
	flows := map[string]*Table{}
	targets := map[string]*Table{}
	for _, pl := range p.Pipelines {
		if first, ok := pipelines[pl.Name]; ok {
			ds.Errorf("RW109", pl.Pos, "rename one of them; the first is in "+first.File, "pipeline %q is defined twice", pl.Name)
		} else {
			pipelines[pl.Name] = pl
		}
		for _, t := range pl.Tables {
			if first, ok := targets[t.QualifiedName()]; ok {
				ds.Errorf("RW110", t.Pos, fmt.Sprintf("a table is the target of one flow; merge them or rename one (the first is at %s)", first.Pos),
					"table %s is the target of two flows", t.QualifiedName())
				continue
			}
			targets[t.QualifiedName()] = t
			if first, ok := flows[t.Name]; ok {
				ds.Errorf("RW111", t.Pos, fmt.Sprintf("flows are named by their table; rename one (the other is %s at %s)", first.QualifiedName(), first.Pos),
					"flow name %q is used by two tables", t.Name)
				continue
			}
			flows[t.Name] = t
		}
	}
	for _, b := range p.Backfills {
		if b.Flow != "" && flows[b.Flow] == nil {
			names := make([]string, 0, len(flows))
			for n := range flows {
				names = append(names, n)
			}
			sort.Strings(names)
			hint := "backfill names a table of a pipeline; known flows: " + strings.Join(names, ", ")
			if best := diag.Closest(b.Flow, names); best != "" {
				hint = fmt.Sprintf("did you mean %q? ", best) + hint
			}
			ds.Errorf("RW112", b.FlowPos, hint, "backfill names unknown flow %q", b.Flow)
		}
	}
	return ds
}

// Flow finds a table by flow name.
func (p *Project) Flow(name string) *Table {
	for _, pl := range p.Pipelines {
		for _, t := range pl.Tables {
			if t.Name == name {
				return t
			}
		}
	}
	return nil
}

// brokenAt reports whether schema validation failed at path itself or,
// for a table, anywhere inside it. That part of the file is then not loaded
// (its errors are reported) while the rest still is, so one typo does not
// hide the other problems of the file.
func brokenAt(bad [][]string, path ...string) bool {
	for _, b := range bad {
		if len(b) < len(path) {
			continue
		}
		match := true
		for i := range path {
			match = match && b[i] == path[i]
		}
		if match && (len(b) == len(path) || len(path) > 1) {
			return true
		}
	}
	return false
}

// ParseBatch reads a batch size as backfill files write it (batch: 7d) and
// rwc refresh --batch takes it: a number of days, "d" optional.
func ParseBatch(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(s), "d"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("batch %q is not a number of days: write e.g. 7d", s)
	}
	return n, nil
}

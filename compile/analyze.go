// Package compile checks a loaded project as a whole: predicates against
// columns, queries against columns, predicate push-down and the dependency
// order of flows. Lint is its diagnostics; the runner and the planner use
// the analysed flows.
package compile

import (
	"io/fs"
	"runtime"
	"strings"
	"sync"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Flow is one table's REPLACE WHERE flow, analysed.
type Flow struct {
	Table     *spec.Table
	Predicate *predicate.Predicate // nil when the predicate has errors
	Query     *query.Analysis      // nil when the query has errors
	// PartitionBy is the column incremental refresh and batches work along:
	// partition_by, else the single column the predicate ranges over.
	PartitionBy string
	// DependsOn are the flows whose targets this flow's query reads.
	DependsOn []*Flow
	// indexes: see Indexes.
	indexes     []Index
	partitioned bool // partitioning: passed lint (see Partitioned)
	// Expectations are the table's expect:, compiled, in the order written.
	Expectations    []*Expectation
	fingerprintOnce sync.Once
	fingerprint     string
	pushed          sync.Map // pushedQuery's answers, by pushKey
}

// Name is the flow's name, its table's name.
func (f *Flow) Name() string { return f.Table.Name }

// Backfill is a backfill file with its predicate compiled against its flow.
type Backfill struct {
	File      *spec.Backfill
	Flow      *Flow
	Predicate *predicate.Predicate
}

// DefaultBatchDays is the batch size of a backfill that names none.
const DefaultBatchDays = 30

// BatchDays is the file's batch size.
func (b *Backfill) BatchDays() int {
	if b.File.BatchDays == 0 {
		return DefaultBatchDays
	}
	return b.File.BatchDays
}

// Project is an analysed project. Flows are in dependency order: a flow
// comes after every flow whose target it reads.
type Project struct {
	Spec      *spec.Project
	Flows     []*Flow
	Backfills []*Backfill
}

// Flow finds a flow by name.
func (p *Project) Flow(name string) *Flow {
	for _, f := range p.Flows {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// Analyze checks every flow and backfill of a loaded project.
func Analyze(sp *spec.Project) (*Project, diag.List) {
	p := &Project{Spec: sp}
	var ds diag.List
	var tables []*spec.Table
	for _, pl := range sp.Pipelines {
		tables = append(tables, pl.Tables...)
	}
	// Flows are analysed independently (CEL checking, the PostgreSQL
	// parser): on all cores, results kept in spec order.
	flows := make([]*Flow, len(tables))
	diags := make([]diag.List, len(tables))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				flows[i], diags[i] = analyzeFlow(tables[i])
			}
		}()
	}
	for i := range tables {
		next <- i
	}
	close(next)
	wg.Wait()
	for i := range tables {
		ds = append(ds, diags[i]...)
		p.Flows = append(p.Flows, flows[i])
	}
	ds = append(ds, p.order()...)
	for _, b := range sp.Backfills {
		bf, bd := analyzeBackfill(p, b)
		ds = append(ds, bd...)
		if bf != nil {
			p.Backfills = append(p.Backfills, bf)
		}
	}
	ds = suppress(sp, ds)
	ds.Sort()
	return p, ds
}

// predicateColumns are the table's columns as the predicate language sees them.
func predicateColumns(t *spec.Table) []predicate.Column {
	cols := make([]predicate.Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = predicate.Column{Name: c.Name, Type: c.Type}
	}
	return cols
}

// CompilePredicate compiles a predicate (CEL) over f's columns: a
// backfill's batch, an override, a window rwc narrowed.
func (f *Flow) CompilePredicate(cel string) (*predicate.Predicate, []predicate.Issue) {
	return predicate.Compile(cel, predicateColumns(f.Table))
}

// compilePredicate compiles a predicate text and positions its issues in the file.
func compilePredicate(text spec.Text, t *spec.Table) (*predicate.Predicate, diag.List) {
	p, issues := predicate.Compile(text.Value, predicateColumns(t))
	return p, issueDiags(issues, func(l predicate.Loc) diag.Pos { return text.At(l.Line, l.Column) })
}

// issueDiags positions a predicate's issues with at.
func issueDiags(issues []predicate.Issue, at func(predicate.Loc) diag.Pos) diag.List {
	var ds diag.List
	for _, is := range issues {
		ds.Errorf(is.Code, at(is.At), is.Hint, "%s", is.Message)
	}
	return ds
}

// CompileOverride compiles a one-off predicate of f given on the command
// line (rwc refresh --where), its issues positioned in the flag's text as
// "--where:1:5". rand() is RW213 there as in a backfill file: the
// override's DELETE and INSERT each evaluate it and would pick other rows.
func (f *Flow) CompileOverride(flag, text string) (*predicate.Predicate, diag.List) {
	p, issues := f.CompilePredicate(text)
	ds := issueDiags(issues, func(l predicate.Loc) diag.Pos { return diag.Pos{File: flag, Line: l.Line, Column: l.Column} })
	if p != nil && p.Determinism == predicate.NonDeterministic {
		ds.Errorf("RW213", diag.Pos{File: flag, Line: 1, Column: 1}, "write a predicate on the columns, e.g. "+f.PartitionBy+" >= date('2026-01-01')",
			"an override must select the same rows for its DELETE and its INSERT, and rand() picks others each time")
	}
	return p, ds
}

func analyzeFlow(t *spec.Table) (*Flow, diag.List) {
	f := &Flow{Table: t, PartitionBy: t.PartitionBy}
	var ds diag.List
	if t.ReplaceWhere.Value != "" {
		var pd diag.List
		f.Predicate, pd = compilePredicate(t.ReplaceWhere, t)
		ds = append(ds, pd...)
	}
	if f.Predicate != nil {
		ds = append(ds, predicateWarnings(f)...)
		if f.PartitionBy == "" && len(f.Predicate.Columns) == 1 {
			f.PartitionBy = f.Predicate.Columns[0]
		}
		if f.PartitionBy == "" && len(f.Predicate.Columns) > 1 {
			ds.Warnf("RW404", t.ReplaceWhere.Pos, "add partition_by: <column> to the table, usually its date column",
				"the predicate ranges over %d columns (%s), so rwc cannot choose the partition column for incremental refresh and batches",
				len(f.Predicate.Columns), joinNames(f.Predicate.Columns))
		}
	}
	ds = append(ds, f.analyzeIndexes()...)
	ds = append(ds, f.analyzePartitioning()...)
	ds = append(ds, f.analyzeDistribution()...)
	ds = append(ds, f.analyzeExpectations()...)
	if strings.TrimSpace(t.Query.Value) != "" {
		a, err := query.Analyze(t.Query.Value)
		if err != nil {
			code := "RW301"
			switch err.Reason {
			case query.ReasonSyntax:
			case query.ReasonTooLong:
				code = "RW312"
			default:
				code = "RW302"
			}
			ds.Errorf(code, t.Query.AtOffset(err.Offset), err.Hint, "%s", err.Message)
		} else {
			f.Query = a
			ds = append(ds, byName(t, a)...)
			ds = append(ds, readOnly(t, a)...)
			if f.Predicate != nil {
				ds = append(ds, pushdown(f)...)
			}
			ds = append(ds, f.captureWarnings()...)
		}
	}
	ds = append(ds, f.analyzeMaintain()...)
	return f, ds
}

// captureWarnings warns of capture: triggers on a flow that never refreshes
// incrementally: every refresh recomputes its whole window, probing
// nothing, so its triggers would save it nothing and cost the sources'
// writers.
func (f *Flow) captureWarnings() diag.List {
	var ds diag.List
	if f.CapturesByTriggers() && !f.Incremental() {
		ds.Warnf("RW407", f.Table.CapturePos, "drop capture: triggers (the default, fingerprints, installs nothing on the sources), or let the flow refresh incrementally: a window on one date, integer or text column that the query passes through unchanged from a source",
			"capture: triggers saves this flow nothing: it never refreshes incrementally, so each refresh recomputes the whole window without a probe, and the triggers would only cost its sources' writers")
	}
	return ds
}

func analyzeBackfill(p *Project, b *spec.Backfill) (*Backfill, diag.List) {
	f := p.Flow(b.Flow)
	if f == nil {
		return nil, nil // spec reported the unknown flow
	}
	pr, ds := compilePredicate(b.Where, f.Table)
	if b.BatchDays > 0 && f.PartitionBy != "" {
		if c := f.Table.Column(f.PartitionBy); c != nil && c.Type.Base != "date" {
			ds.Errorf("RW113", b.BatchPos, "remove batch:, or give the flow a date partition_by column",
				"batch runs along a date partition column, but %s's partition column %s is %s", f.Name(), f.PartitionBy, c.Type.Canonical)
		}
	}
	if b.BatchDays > 0 && f.PartitionBy == "" {
		ds.Errorf("RW113", b.BatchPos, "set partition_by on the flow, or remove batch:", "batch needs a partition column, and flow %s has none", f.Name())
	}
	if pr == nil {
		return nil, ds
	}
	if pr.Determinism != predicate.Immutable {
		ds.Errorf("RW213", b.Where.Pos, "write fixed dates, e.g. "+f.PartitionBy+" >= date('2026-01-01'): a committed backfill must select the same rows whenever it runs",
			"a backfill predicate must not depend on when it runs (current_date(), current_timestamp(), rand())")
	}
	return &Backfill{File: b, Flow: f, Predicate: pr}, ds
}

// Load reads the specs in fsys and analyses them: everything lint checks.
func Load(fsys fs.FS, display string) (*Project, diag.List, error) {
	// The parsers' one-time start-up (about 10 ms) is paid beside the
	// reading of the specs, rather than by the first flow analysed.
	var warm sync.WaitGroup
	warm.Go(query.Warm)
	warm.Go(predicate.Warm)
	defer warm.Wait()
	sp, ds := spec.Load(fsys, display)
	p, ads := Analyze(sp)
	ds = append(suppress(sp, ds), ads...)
	ds.Sort()
	return p, ds, nil
}

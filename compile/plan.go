package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// PlanFormatVersion is the version of the JSON plan (schemas/plan.schema.json).
const PlanFormatVersion = 1

// Plan is the contract of `rwc plan`: every view renders from it and
// `rwc apply PLAN` executes it.
type Plan struct {
	FormatVersion int            `json:"format_version"`
	SpecDir       string         `json:"spec_dir"`
	At            time.Time      `json:"at"`
	Timezone      string         `json:"timezone"`
	Base          Rev            `json:"base"`
	Head          Rev            `json:"head"`
	Flows         []FlowPlan     `json:"flows"`
	Backfills     []BackfillPlan `json:"backfills"`
	Diagnostics   diag.List      `json:"diagnostics"`
	// Error: why nothing was planned, when it was not the specs' errors
	// (the database could not be reached or read, --base is no revision):
	// the plan then has no flows, and rwc plan exits 1.
	Error string `json:"error,omitempty"`
	// Select: the --select selectors the plan was made with (Selection);
	// the plan has only the flows they select, and their backfill files.
	Select []string `json:"select,omitempty"`
	// Assumed: what the plan assumed because it could not observe it.
	Assumed []string    `json:"assumed,omitempty"`
	Summary PlanSummary `json:"summary"`
	Basis   Basis       `json:"basis"`
}

// Rev names one side of the diff.
type Rev struct {
	// Source is "state" (the last deployment recorded in the database),
	// "git" (--base REV), "none" (nothing deployed) or "worktree" (head).
	Source string `json:"source"`
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
}

// FlowPlan is what the plan does to one flow, and why.
type FlowPlan struct {
	// diags are what planning the flow found wrong (a source missing from
	// the database), for the plan's Diagnostics.
	diags     diag.List
	targetOID uint32   // observed (Basis.Targets)
	Flow      string   `json:"flow"`
	Pipeline  string   `json:"pipeline"`
	Target    string   `json:"target"`
	Action    Action   `json:"action"`
	Reasons   []Reason `json:"reasons"`
	// Refused is why rwc apply refuses the flow's refresh, changing
	// nothing, in its words (action refused).
	Refused      string            `json:"refused,omitempty"`
	Changes      Changes           `json:"changes"`
	Window       string            `json:"window,omitempty"`
	WindowSQL    string            `json:"window_sql,omitempty"`
	WindowChange *predicate.Change `json:"window_change,omitempty"`
	// OldWindow: the deployed definition's window, resolved at the plan's
	// instant, when it is not the window now.
	OldWindow   string   `json:"old_window,omitempty"`
	SQL         []string `json:"sql"`
	Destructive bool     `json:"destructive,omitempty"`
	RowCounts
	// RowsLost: for a protected flow (reset_allowed: false, in the spec or
	// as deployed) whose window reaches beyond the last refresh's, with a
	// database at hand, the rows its refresh would delete there that its
	// query no longer yields, counted now (Flow.WindowLoss); rwc apply counts
	// again and refuses when there are any, unless --allow-loss.
	RowsLost *int64 `json:"rows_lost,omitempty"`
	// Partitions: for an incremental refresh planned with a database, the
	// partition values whose source rows changed, which it recomputes.
	Partitions []string `json:"partitions,omitempty"`
	// Partitioning and Swapped: a partitioned target's key and interval,
	// and the partitions (their first days) the refresh swaps in whole;
	// the rest of its window it deletes and inserts.
	Partitioning *PlanPartitioning `json:"partitioning,omitempty"`
	Swapped      []string          `json:"swapped,omitempty"`
	// Distribution: what Citus makes of the target (distribution: in the
	// spec), in words.
	Distribution string `json:"distribution,omitempty"`
	// Indexes: what becomes of the target's indexes (planIndexes).
	Indexes []IndexChange `json:"indexes,omitempty"`
	// Maintenance: for maintain: immediate, each source's triggers and
	// function, which the refresh installs in its transaction when they are
	// not as rwc would make them.
	Maintenance []Maintenance `json:"maintenance,omitempty"`
	// Expectations: the flow's expect:, and what changed in them.
	Expectations []PlanExpectation `json:"expectations,omitempty"`
	Notes        []string          `json:"notes,omitempty"`
}

// RowCounts is what a refresh would delete, counted on the target now,
// and insert, as PostgreSQL's planner estimates its query (running the
// query would cost what the refresh costs); nil: not known.
type RowCounts struct {
	RowsToDelete     *int64 `json:"rows_to_delete,omitempty"`
	EstimatedInserts *int64 `json:"estimated_inserts,omitempty"`
}

// BackfillPlan is a backfill file and where it stands.
type BackfillPlan struct {
	File   string `json:"file"`
	Flow   string `json:"flow"`
	Where  string `json:"where"`
	Reason string `json:"reason"`
	// Status: "pending" (apply runs it), "partial" (apply resumes it),
	// "applied", or "changed" (edited after it ran: apply refuses).
	Status BackfillStatus `json:"status"`
	// Range is what it recomputes on the partition column, e.g.
	// [2026-10-01, 2026-10-31]; "" when that is not a plain range.
	Range string `json:"range,omitempty"`
	RowCounts
	// AllowLoss: the file says allow_loss: true.
	AllowLoss bool `json:"allow_loss,omitempty"`
	// RowsLost: for a pending or partial backfill of a protected flow
	// (reset_allowed: false, in the spec or as deployed), with a database
	// at hand, the rows it would delete that its recompute cannot give
	// back, counted now (Statements.CountLost); rwc apply counts again and
	// refuses the file when there are any, unless it allows the loss.
	RowsLost *int64 `json:"rows_lost,omitempty"`
	// Held: why rwc apply does not run it now, pending as it is: its flow
	// is refused or skipped (FlowPlan.Refused, ActionSkipped).
	Held string `json:"held,omitempty"`
}

// PlanSummary counts what a reader wants first.
type PlanSummary struct {
	Flows             int  `json:"flows"`
	DefinitionChanges int  `json:"definition_changes"`
	PendingBackfills  int  `json:"pending_backfills"`
	Destructive       bool `json:"destructive"`
}

// Basis is what the plan was computed from; `rwc apply PLAN`
// refuses the plan when any of them moved.
type Basis struct {
	Deployment  int64             `json:"deployment"`
	Specs       string            `json:"specs"`
	SpecFiles   map[string]string `json:"spec_files"`
	LastRefresh map[string]string `json:"last_refresh"`
	// Targets is the table id each flow's target name held (0: none), as
	// the plan saw it: what it refused or adopted.
	Targets map[string]uint32 `json:"targets,omitempty"`
}

// HasChanges reports definition changes (new, removed, changed flows) and
// backfills to run; routine window refreshes do not count.
func (p *Plan) HasChanges() bool {
	return p.Summary.DefinitionChanges > 0 || p.Summary.PendingBackfills > 0
}

// PlanInput is everything a plan is computed from.
type PlanInput struct {
	Head    *Project
	HeadRev Rev
	Base    *Project // nil: nothing deployed
	BaseRev Rev
	// Definitions is what changed in each flow of both Base and Head
	// (diff.Classify); a flow not in it did not change.
	Definitions map[string]Definition
	State       map[string]FlowState // nil: no database reachable
	Basis       Basis
	At          time.Time
	Zone        *time.Location
	// Rows counts the target rows a refresh's statements delete and
	// estimates the rows they insert (RowCounts); nil: no database. Flows
	// are planned concurrently: it must be safe to call from several
	// goroutines at once.
	Rows func(f *Flow, s Statements) RowCounts
	// BackfillStatus maps a backfill file to its ledger status, and, for a
	// file that is an applied one renamed and edited ("changed"), to the
	// ledger's name for that one ("" otherwise); nil (no database): files
	// already in Base count as applied, others pending.
	BackfillStatus func(b *Backfill) (status BackfillStatus, renamedFrom string)
	// Observe reads what f's statements depend on (nil: no database; the
	// plan assumes the zero Observation and says so). Called from several
	// goroutines at once, and more than once for a flow.
	Observe func(f *Flow) (Observation, error)
	// FindChanges is what an incremental refresh of f's window would find
	// changed now (nil: no database; the plan shows the whole window's
	// statements, which the refresh narrows). Called from several
	// goroutines at once.
	FindChanges func(f *Flow, window *predicate.Predicate) (Captured, error)
	// CountLost runs loss counts of f (Flow.WindowLoss, Flow.BatchLoss)
	// and adds them up (nil: unknown); nil: not counted. Called for
	// protected flows only.
	CountLost func(f *Flow, counts []string) *int64
	// Select narrows the plan to the selected flows and their backfill
	// files (nil: every flow); removed flows are then not planned.
	Select *Selection
}

// observe is in.Observe for f, noting on fp (when not nil) what it found
// or that it could not look.
func (in PlanInput) observe(f *Flow, fp *FlowPlan) Observation {
	if in.Observe == nil {
		return Observation{}
	}
	obs, err := in.Observe(f)
	if fp == nil {
		return obs
	}
	var missing *MissingSource
	switch {
	case errors.As(err, &missing) && in.targetOf(missing.Relation) != nil:
		fp.Notes = append(fp.Notes, fmt.Sprintf("the query reads %s, the target of flow %s, which no apply has created yet: its output types are not checked, and it is planned as if they agree with the target's",
			missing.Relation, in.targetOf(missing.Relation).Name()))
	case errors.As(err, &missing):
		fp.diags.Errorf("RW502", missing.Pos,
			"correct the name (schema-qualified when the table is not on the search_path), or create the table before rwc apply, which would fail on it",
			"flow %s reads %s, which does not exist in the database", f.Name(), missing.Relation)
	case err != nil:
		fp.Notes = append(fp.Notes, "could not check the query's output types against the target's ("+err.Error()+"): planned as if they agree")
	}
	fp.Notes = append(fp.Notes, obs.AfterQueryNotes()...)
	return obs
}

// MissingSource is what PlanInput.Observe returns when the query reads a
// relation the database does not have: the name as the server quoted it,
// where the query names it, and the error as a refresh would report it.
type MissingSource struct {
	Relation string
	Pos      diag.Pos
	Err      error
}

func (e *MissingSource) Error() string { return e.Err.Error() }
func (e *MissingSource) Unwrap() error { return e.Err }

// targetOf is the head flow whose target rel (as the server quotes a
// relation: schema.name, or name) is, or nil.
func (in PlanInput) targetOf(rel string) *Flow {
	schema, name, qualified := strings.Cut(rel, ".")
	if !qualified {
		name = schema
	}
	for _, f := range in.Head.Flows {
		if f.Name() == name && (!qualified || f.Table.Pipeline.Schema == schema) {
			return f
		}
	}
	return nil
}

// onceEach makes observe look at each flow once.
func onceEach(observe func(*Flow) (Observation, error)) func(*Flow) (Observation, error) {
	if observe == nil {
		return nil
	}
	type seen struct {
		obs Observation
		err error
	}
	var mu sync.Mutex
	cache := map[*Flow]*seen{}
	return func(f *Flow) (Observation, error) {
		mu.Lock()
		s, ok := cache[f]
		mu.Unlock()
		if !ok {
			obs, err := observe(f)
			s = &seen{obs, err}
			mu.Lock()
			cache[f] = s
			mu.Unlock()
		}
		return s.obs, s.err
	}
}

// NoDatabaseAssumption is what a plan without a database assumes of what
// rwc apply observes first.
const NoDatabaseAssumption = "planned without a database: each query's output types are assumed to agree with its target's columns, its sources to be tables and its target to exist (rwc apply checks them; where they differ, the window is applied after the query only, or the refresh is not incremental, or it creates the target)"

// RenamedBackfillHint says how to resolve RW501 for file, read as the
// applied backfill file entry (the ledger's name for it) renamed and edited.
func RenamedBackfillHint(file, entry string) string {
	return fmt.Sprintf("restore %s as it was applied (renaming it is fine, editing it is not); if %s is a new backfill, keep %s in the specs until the new one has run, or first deploy its deletion, in a deployment of its own",
		entry, file, entry)
}

// NotPlanned is the plan of specs that have lint errors: no flow is
// planned, and the diagnostics say why, where a pull request's comment or
// a JSON reader looks for the plan.
func NotPlanned(dir string, head Rev, at time.Time, zone *time.Location, ds diag.List) *Plan {
	return &Plan{FormatVersion: PlanFormatVersion, SpecDir: dir, At: at.UTC(), Timezone: zone.String(), Base: Rev{Source: "none"}, Head: head,
		Flows: []FlowPlan{}, Backfills: []BackfillPlan{}, Diagnostics: ds}
}

// BuildPlan diffs head against base and state, and decides every flow.
func BuildPlan(in PlanInput) (*Plan, error) {
	zone := in.Zone
	if zone == nil {
		zone = time.UTC
	}
	rc := predicate.Resolution{Now: in.At, Zone: zone}
	p := &Plan{FormatVersion: PlanFormatVersion, At: in.At.UTC(), Timezone: zone.String(), Base: in.BaseRev, Head: in.HeadRev,
		Diagnostics: diag.List{}, Basis: in.Basis, Backfills: []BackfillPlan{}}
	in.Observe = onceEach(in.Observe)
	p.Basis.Specs = SpecsHash(in.Head)
	p.Basis.SpecFiles = FileHashes(in.Head)
	if in.Select != nil {
		p.Select = in.Select.Selectors
		in.Head = in.Head.Only(in.Select)
	}
	flows, err := planFlows(in, rc)
	if err != nil {
		return nil, err
	}
	skipDependents(in.Head, flows)
	p.Flows = flows
	if in.Observe != nil {
		p.Basis.Targets = map[string]uint32{}
	}
	for _, fp := range flows {
		p.Diagnostics = append(p.Diagnostics, fp.diags...)
		if p.Basis.Targets != nil {
			p.Basis.Targets[fp.Flow] = fp.targetOID
		}
	}
	if in.Observe == nil {
		p.Assumed = append(p.Assumed, NoDatabaseAssumption)
	}
	if in.Base != nil && in.Select == nil {
		for _, old := range in.Base.Flows {
			if in.Head.Flow(old.Name()) == nil {
				p.Flows = append(p.Flows, FlowPlan{Flow: old.Name(), Pipeline: old.Table.Pipeline.Name, Target: old.Target(),
					Action: ActionNone, Reasons: []Reason{}, Changes: Changes{{Kind: ChangeRemoved}}, SQL: []string{},
					Notes: []string{"the flow is no longer refreshed; its target " + old.Target() + " is kept (rwc apply --drop-removed drops it)"}})
			}
		}
	}
	appliedAs := make([]string, len(in.Head.Backfills))
	held := map[string]Action{}
	for _, fp := range p.Flows {
		if fp.Action == ActionRefused || fp.Action == ActionSkipped {
			held[fp.Flow] = fp.Action
		}
	}
	for i, b := range in.Head.Backfills {
		var bp BackfillPlan
		bp, appliedAs[i] = planBackfill(in, b, rc)
		if a, ok := held[bp.Flow]; ok && (bp.Status == BackfillPending || bp.Status == BackfillPartial) {
			bp.Held = fmt.Sprintf("rwc apply does not run it: flow %s is %s", bp.Flow, a)
		}
		p.Backfills = append(p.Backfills, bp)
	}
	for i, b := range p.Backfills {
		switch b.Status {
		case BackfillPending, BackfillPartial:
			p.Summary.PendingBackfills++
		case BackfillChanged:
			src := in.Head.Backfills[i].File
			pos := diag.Pos{File: src.File, Line: 1, Column: 1}
			if as := appliedAs[i]; as != "" {
				p.Diagnostics.Errorf("RW501", pos, RenamedBackfillHint(src.File, as),
					"backfill file %s is new to the ledger, but %s, a backfill of %s that was applied (or started), left the specs since the last deployment: this is read as that file renamed and edited, and rwc apply refuses it",
					src.File, as, b.Flow)
				continue
			}
			p.Diagnostics.Errorf("RW501", pos,
				"restore the file as it was applied; to recompute another range, commit a new backfill file",
				"backfill file %s was changed after it was applied: rwc apply refuses it", src.File)
		}
	}
	for _, fp := range p.Flows {
		p.Summary.Flows++
		if len(fp.Changes) > 0 {
			p.Summary.DefinitionChanges++
		}
		p.Summary.Destructive = p.Summary.Destructive || fp.Destructive
	}
	return p, nil
}

// planFlows plans every head flow, in order, on every core: each flow's
// plan is its own (the SQL renders through PostgreSQL's parser, the
// estimates are separate queries), and a project's flows are many.
func planFlows(in PlanInput, rc predicate.Resolution) ([]FlowPlan, error) {
	out := make([]FlowPlan, len(in.Head.Flows))
	errs := make([]error, len(in.Head.Flows))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = planFlow(in, in.Head.Flows[i], rc)
			}
		}()
	}
	for i := range in.Head.Flows {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// skipDependents marks the flows that read the target of a flow rwc apply
// refuses as apply skips them, and in turn those that read theirs; flows
// are in the project's order, each after the flows it reads.
func skipDependents(head *Project, flows []FlowPlan) {
	held := map[string]string{} // a flow apply does not refresh → the refused flow why
	for i := range flows {
		fp := &flows[i]
		if fp.Action == ActionRefused {
			held[fp.Flow] = fp.Flow
			continue
		}
		f := head.Flow(fp.Flow)
		if f == nil {
			continue
		}
		for _, d := range f.DependsOn {
			why, ok := held[d.Name()]
			if !ok {
				continue
			}
			fp.Action, fp.Reasons, fp.SQL, fp.RowCounts = ActionSkipped, []Reason{}, []string{}, RowCounts{}
			fp.Notes = append(fp.Notes, fmt.Sprintf("rwc apply skips it: it reads the target of %s, and rwc apply refuses %s", d.Name(), why))
			held[fp.Flow] = why
			break
		}
	}
}

func planFlow(in PlanInput, f *Flow, rc predicate.Resolution) (FlowPlan, error) {
	fp := FlowPlan{Flow: f.Name(), Pipeline: f.Table.Pipeline.Name, Target: f.Target(), Reasons: []Reason{}, Changes: Changes{}, SQL: []string{}}
	window, err := f.Predicate.Resolve(rc)
	if err != nil {
		return fp, err
	}
	obs := in.observe(f, &fp)
	obs.Today = rc.Today()
	fp.targetOID = obs.TargetOID
	stmts, err := f.Statements(window, false, obs)
	if err != nil {
		return fp, err
	}
	fp.Window, fp.WindowSQL = stmts.PredicateCEL, stmts.PredicateSQL
	var old *Flow
	if in.Base != nil {
		old = in.Base.Flow(f.Name())
	}
	if old == nil {
		fp.Changes = append(fp.Changes, Change{Kind: ChangeNew})
	} else if d, ok := in.Definitions[f.Name()]; ok {
		fp.Changes, fp.WindowChange = append(fp.Changes, d.Changes...), d.Window
		if ow, err := old.Predicate.Resolve(rc); err == nil && ow.Root.CEL() != fp.Window {
			fp.OldWindow = ow.Root.CEL()
		}
	}
	st, haveState := in.State[f.Name()]
	// With a database (its state, if any, read): what rwc apply would do
	// with the table under the target's name.
	if in.Observe != nil && refusesTarget(f, st, obs, &fp) {
		return fp, nil
	}
	assumed := st
	if !haveState && old != nil {
		// No database: decide from the base spec as if it had been
		// refreshed at the same instant.
		assumed = FlowState{Found: true, LastRefreshed: true, Columns: old.Columns(), QueryFingerprint: old.Fingerprint(),
			Determinism: old.Predicate.Determinism.String()}
		if oldWindow, err := old.Predicate.Resolve(rc); err == nil {
			assumed.PredicateCEL = oldWindow.Root.CEL()
		}
	}
	dec, writes, err := in.decide(f, RefreshInput{State: assumed, Window: window, Observed: obs}, &fp)
	if err != nil {
		return fp, err
	}
	fp.Action, fp.Reasons = dec.Action, dec.Reasons
	creating := dec.Action == ActionCreate && (!(haveState && st.Found) || obs.TargetMissing)
	if creating {
		fp.SQL = append(fp.SQL, stmts.CreateSchema, stmts.CreateTable)
		if stmts.Distribute != "" {
			fp.SQL = append(fp.SQL, stmts.Distribute)
		}
	}
	for _, c := range dec.Columns {
		fp.SQL = append(fp.SQL, f.AlterSQL(c))
		switch {
		case c.Destructive():
			fp.Destructive = true
			fp.Notes = append(fp.Notes, c.Change()+" loses data: rwc apply refuses it without --allow-destructive")
		case c.Kind == "retyped":
			fp.Notes = append(fp.Notes, fmt.Sprintf("%s keeps every value (%s → %s widens the column)", c.Change(), c.From, c.To))
		}
	}
	if len(dec.Columns) > 0 {
		fp.Notes = append(fp.Notes, "the ALTER TABLE statements commit on their own, before the refresh, so that readers of the target never wait for its recompute; should the refresh then fail, they stay, and the next refresh recomputes the window")
	}
	fp.planIndexes(f, old, obs, creating)
	fp.planCapture(f)
	if f.Immediate() {
		if fp.Maintenance, err = f.Maintenance(window, stmts, obs.Settings); err != nil {
			return fp, err
		}
	} else if fp.Changes.Has(ChangeMaintain) {
		fp.Notes = append(fp.Notes, "maintain: immediate removed: rwc apply drops the flow's triggers and functions from its sources before it refreshes anything; the target then follows its sources at each rwc apply")
	}
	if fp.Changes.Has(ChangeQuery) || fp.Changes.Has(ChangeColumnAdded) {
		outside := "rows outside it keep the values the old query gave them"
		if fp.Changes.Has(ChangeColumnAdded) {
			outside = "rows outside it keep NULL in the added columns"
		}
		fp.Notes = append(fp.Notes, "only the window is recomputed; "+outside+": commit a backfill file (rwc backfill new "+f.Name()+" --where ... --reason ...) to recompute history")
	}
	if count := f.WindowLoss(st, window, obs); haveState && count != "" && !obs.TargetMissing && in.CountLost != nil {
		fp.SQL = append(fp.SQL, count)
		fp.RowsLost = in.CountLost(f, []string{count})
	}
	fp.Expectations = planExpectations(f, old)
	checks, err := f.Checks(writes[len(writes)-1], rc)
	if err != nil {
		return fp, err
	}
	// The counts before run before the first write, of what it replaces
	// (the refresh counts them so: see run's expectBefore).
	first, err := f.Checks(writes[0], rc)
	if err != nil {
		return fp, err
	}
	fp.SQL = append(fp.SQL, writes[0].PartitionsFirst...)
	if first.Before != "" {
		fp.SQL = append(fp.SQL, first.Before)
	}
	for i, w := range writes {
		if i == len(writes)-1 {
			fp.SQL = append(fp.SQL, checks.Within(w)...)
			continue
		}
		fp.SQL = append(fp.SQL, w.List()...)
	}
	if in.Rows != nil && !dec.Unchanged {
		fp.RowCounts = in.Rows(f, writes[len(writes)-1])
	}
	fp.Distribution = f.describeDistribution()
	if f.Partitioned() {
		fp.Partitioning = &PlanPartitioning{By: f.Table.Partitioning.By, Interval: f.Table.Partitioning.Interval}
		for _, sw := range writes[len(writes)-1].Swaps {
			fp.Swapped = append(fp.Swapped, sw.From)
		}
		fp.noteDefaultLocked(writes, obs)
	}
	return fp, nil
}

// noteDefaultLocked says what a DEFAULT partition costs readers: ATTACH
// PARTITION scans it for rows of the new range under ACCESS EXCLUSIVE,
// which its transaction holds to its commit. The partitions the refresh
// knows it needs are made in a short transaction of their own, first
// (Statements.PartitionsFirst); those its rows turn out to need after the
// last one (Overflow) only in the refresh's, whose readers of the DEFAULT
// partition then wait for all of it.
func (fp *FlowPlan) noteDefaultLocked(writes []Statements, obs Observation) {
	if obs.DefaultPartition == "" {
		return
	}
	first, overflow := len(writes[0].PartitionsFirst) > 0, false
	for _, w := range writes {
		overflow = overflow || w.Overflow != ""
	}
	if first {
		fp.Notes = append(fp.Notes, fmt.Sprintf("the refresh creates partitions, and the target has a DEFAULT partition (%s), which each ATTACH PARTITION locks (ACCESS EXCLUSIVE) until its transaction commits: so the CREATE TABLE and ATTACH PARTITION statements commit on their own, before the refresh, and readers wait for them (a scan of %s) and for the swap, not for the whole refresh; should the refresh then fail, the new partitions stay, empty", obs.DefaultPartition, obs.DefaultPartition))
	}
	if overflow {
		fp.Notes = append(fp.Notes, fmt.Sprintf("the target has a DEFAULT partition (%s): should the query yield rows after the partitions there are, the refresh creates theirs, and each ATTACH PARTITION locks %s (ACCESS EXCLUSIVE) until the refresh commits, so readers whose queries scan it wait for the whole refresh", obs.DefaultPartition, obs.DefaultPartition))
	}
}

// refusesTarget notes on fp what rwc apply does with the table that holds
// the target's name (TargetVerdict), and reports whether it refuses it:
// the plan then shows the refusal, in apply's words, and no statement, and
// reports it as an error (RW503): the apply would fail.
func refusesTarget(f *Flow, st FlowState, obs Observation, fp *FlowPlan) bool {
	var changes []ColumnChange
	if st.Found {
		changes = f.ColumnChanges(st.Columns)
	}
	a := f.TargetVerdict(st, obs, changes)
	switch {
	case a.Refusal != "":
		fp.Action, fp.Reasons, fp.Refused, fp.SQL = ActionRefused, []Reason{}, a.Refusal, []string{}
		code, at := "RW503", f.Table.Pos
		if a.Code != "" {
			code, at = a.Code, a.At
		}
		fp.diags.Errorf(code, at, "do what the message says; until then rwc apply changes nothing for this flow (and skips the flows that read its target)", "rwc apply refuses flow %s: %s", f.Name(), strings.TrimPrefix(a.Refusal, "flow "+f.Name()+": "))
		return true
	case a.Adopt:
		fp.Notes = append(fp.Notes, fmt.Sprintf("%s has a new table id, and the one rwc made is gone, as Citus's alter_distributed_table leaves a table it rebuilt: rwc apply adopts it if its window holds as many rows as rwc left there (it refuses it otherwise, changing nothing), and recomputes its window", f.Target()))
	}
	return false
}

// PlanPartitioning is a partitioned target's partitioning:, as a plan
// shows it.
type PlanPartitioning struct {
	By       string `json:"by"`
	Interval string `json:"interval"`
}

// decide is the refresh's decision, as rwc apply makes it: when the flow
// refreshes incrementally, from what the refresh would find changed now
// (in.FindChanges), noted on fp.
func (in PlanInput) decide(f *Flow, rin RefreshInput, fp *FlowPlan) (Decision, []Statements, error) {
	dec := f.DecideRefresh(rin)
	if dec.NotIncremental != "" {
		fp.Notes = append(fp.Notes, "not incremental: "+dec.NotIncremental)
	}
	whole := func(d Decision) (Decision, []Statements, error) {
		s, err := f.Writes(d, rin.Window, false, rin.Observed)
		return d, []Statements{s}, err
	}
	if dec.Action != ActionIncremental {
		return whole(dec)
	}
	if in.FindChanges == nil {
		fp.Notes = append(fp.Notes, "incremental: only the partitions whose source rows changed are deleted and recomputed (the SQL below, narrowed to them); if the target was changed outside rwc or a dimension changed, the whole window is recomputed instead")
		return whole(dec)
	}
	found, err := in.FindChanges(f, rin.Window)
	if err != nil {
		fp.Notes = append(fp.Notes, "could not compare the fingerprints ("+err.Error()+"): the SQL below is the whole window's, which rwc apply narrows to the partitions whose source rows changed")
		return whole(dec)
	}
	dec, writes, err := f.CaptureWrites(dec, rin.Window, rin.Window, found, rin.Observed)
	fp.Partitions = dec.Partitions
	switch {
	case dec.Unchanged:
		fp.Notes = append(fp.Notes, "incremental: no source row changed in the window since the last refresh, and the target is as it left it: rwc apply writes nothing")
	case dec.Narrowed != nil:
		fp.Notes = append(fp.Notes, fmt.Sprintf("incremental: the source rows of %d partitions changed since the last refresh (%s): only those are deleted and recomputed", len(dec.Partitions), strings.Join(dec.Partitions, ", ")))
	case len(writes) > 1:
		fp.Notes = append(fp.Notes, "the target was changed outside rwc within the window: rwc apply writes the partitions whose source rows changed first (the first DELETE and INSERT below), while it checks the target beside the write, then recomputes the whole window on top, in the same transaction")
	}
	return dec, writes, err
}

// FileHashes identifies each spec file, so a stale plan can name the files
// that changed.
func FileHashes(p *Project) map[string]string {
	out := map[string]string{}
	for f, lines := range p.Spec.Sources {
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[f] = hex.EncodeToString(h[:8])
	}
	return out
}

// SpecsHash identifies the exact spec files a plan was made from.
func SpecsHash(p *Project) string {
	files := make([]string, 0, len(p.Spec.Sources))
	for f := range p.Spec.Sources {
		files = append(files, f)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f + "\x00" + strings.Join(p.Spec.Sources[f], "\n") + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func planBackfill(in PlanInput, b *Backfill, rc predicate.Resolution) (bp BackfillPlan, renamedFrom string) {
	bp = BackfillPlan{File: b.File.File, Flow: b.Flow.Name(), Where: b.File.Where.Value, Reason: b.File.Reason, Status: BackfillPending}
	switch {
	case in.BackfillStatus != nil:
		bp.Status, renamedFrom = in.BackfillStatus(b)
	case in.Base != nil && in.Base.Spec.Sources[b.File.File] != nil:
		// Without a ledger, the deployed file stands for the applied one.
		bp.Status = BackfillApplied
		if !slices.Equal(in.Base.Spec.Sources[b.File.File], in.Head.Spec.Sources[b.File.File]) {
			bp.Status = BackfillChanged
		}
	}
	if b.Flow.PartitionBy != "" {
		if r, ok := predicate.Range(b.Predicate, b.Flow.PartitionBy); ok {
			bp.Range = r
		}
	}
	bp.AllowLoss = b.File.AllowLoss
	where, err := b.Predicate.Resolve(rc)
	if err != nil {
		return bp, renamedFrom
	}
	if in.CountLost != nil && bp.Status.Runs() && b.Flow.Protected(in.State[b.Flow.Name()]) {
		// What rwc apply counts before it starts the file: its batches
		// outside the window, which the flow's own refresh recomputes first.
		if window, err := b.Flow.Predicate.Resolve(rc); err == nil {
			if counts, err := b.Flow.BatchLoss(where, window, b.BatchDays(), rc, in.observe(b.Flow, nil)); err == nil {
				bp.RowsLost = in.CountLost(b.Flow, counts)
			}
		}
	}
	if in.Rows != nil && bp.Status != BackfillApplied {
		if s, err := b.Flow.Statements(where, false, in.observe(b.Flow, nil)); err == nil {
			bp.RowCounts = in.Rows(b.Flow, s)
		}
	}
	return bp, renamedFrom
}

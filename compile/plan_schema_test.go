package compile_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/schemas"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func planSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemas.Plan))
	if err != nil {
		t.Fatalf("schemas/plan.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // "at" must really be a date-time
	if err := c.AddResource("plan.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validatePlanJSON checks one serialised plan against the schema.
func validatePlanJSON(t *testing.T, sch *jsonschema.Schema, name string, raw []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s does not match schemas/plan.schema.json: %v", name, err)
	}
}

func validatePlan(t *testing.T, sch *jsonschema.Schema, name string, p *compile.Plan) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	validatePlanJSON(t, sch, name, raw)
}

// TestGoldenPlansMatchSchema validates every golden JSON plan of the
// command's corpus (cmd/rwc/testdata/plan/<case>/want.json).
func TestGoldenPlansMatchSchema(t *testing.T) {
	sch := planSchema(t)
	files, err := filepath.Glob("../cmd/rwc/testdata/plan/*/want.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("found %d golden plans under cmd/rwc/testdata/plan; expected at least 12", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		validatePlanJSON(t, sch, f, raw)
	}
}

// TestRepoPipelinesPlanMatchesSchema plans the repository's own pipelines/
// in the situations a plan can be made in, filling every optional field,
// and validates each plan.
func TestRepoPipelinesPlanMatchesSchema(t *testing.T) {
	sch := planSchema(t)
	head, ds, err := compile.Load(os.DirFS("../pipelines"), "pipelines")
	if err != nil {
		t.Fatal(err)
	}
	if ds.HasErrors() {
		t.Fatalf("pipelines/ has lint errors: %v", ds)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}

	// Nothing deployed, no database.
	p, err := compile.BuildPlan(compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree", Commit: strings.Repeat("a", 40)},
		BaseRev: compile.Rev{Source: "none"}, At: at})
	if err != nil {
		t.Fatal(err)
	}
	p.SpecDir = "pipelines"
	if len(p.Flows) != len(head.Flows) || p.Summary.DefinitionChanges != len(head.Flows) {
		t.Errorf("first plan: %d flows, %d changes; want %d new flows", len(p.Flows), p.Summary.DefinitionChanges, len(head.Flows))
	}
	validatePlan(t, sch, "first plan of pipelines/", p)

	// A deployment whose base differs in every way a plan reports, read
	// from a database that has state and estimates.
	base := loadMap(t, baseVariant(t))
	state := map[string]compile.FlowState{}
	last := map[string]string{}
	for _, f := range base.Flows {
		w, err := f.Predicate.Resolve(predicate.Resolution{Now: at.Add(-24 * time.Hour), Zone: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		state[f.Name()] = compile.FlowState{Found: true, LastRefreshed: true, Columns: f.Columns(), QueryFingerprint: f.Fingerprint(),
			PredicateCEL: w.Root.CEL(), EnvVersion: 1, Determinism: f.Predicate.Determinism.String()}
		last[f.Name()] = at.Add(-24 * time.Hour).Format(time.RFC3339Nano)
	}
	n := int64(1234)
	p, err = compile.BuildPlan(compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree", Commit: strings.Repeat("b", 40), Dirty: true},
		Base: base, BaseRev: compile.Rev{Source: "state", Commit: strings.Repeat("c", 40)}, State: state,
		Definitions: diff.Classify(base, head, at, paris),
		Basis:       compile.Basis{Deployment: 7, LastRefresh: last}, At: at, Zone: paris,
		Rows: func(*compile.Flow, compile.Statements) compile.RowCounts {
			return compile.RowCounts{RowsToDelete: &n, EstimatedInserts: &n}
		},
		BackfillStatus: func(*compile.Backfill) (compile.BackfillStatus, string) { return compile.BackfillChanged, "" }})
	if err != nil {
		t.Fatal(err)
	}
	p.SpecDir = "pipelines"
	seen := map[string]bool{}
	for _, b := range p.Backfills {
		seen["backfill "+b.Status.String()] = true
		if b.Range != "" && b.RowsToDelete != nil && b.EstimatedInserts != nil {
			seen["backfill range and estimate"] = true
		}
	}
	for _, d := range p.Diagnostics {
		seen["diagnostic "+d.Code] = true
	}
	for _, f := range p.Flows {
		for _, c := range f.Changes {
			seen[strings.SplitN(c.String(), ":", 2)[0]] = true
		}
		if f.WindowChange != nil {
			seen["window_change"] = true
		}
		if f.Destructive {
			seen["destructive"] = true
		}
		if f.RowsToDelete != nil && f.EstimatedInserts != nil {
			seen["row_counts"] = true
		}
		if len(f.Indexes) > 0 {
			seen["indexes"] = true
		}
	}
	for _, want := range []string{"new", "removed", "query_changed", "properties_changed", "predicate_widened", "column_added",
		"column_dropped", "column_retyped", "window_change", "destructive", "row_counts", "backfill changed",
		"backfill range and estimate", "diagnostic RW501", "index_added", "indexes"} {
		if !seen[want] {
			t.Errorf("the changed plan has no %s: the variant no longer exercises it", want)
		}
	}
	validatePlan(t, sch, "changed plan of pipelines/", p)
}

// baseVariant is pipelines/ as an older deployment might have had it: it
// differs from today's specs in predicate, query, columns and properties,
// and has a flow that has since been removed.
func baseVariant(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../pipelines", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	edit := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("pipelines/ changed: %q not found; update baseVariant", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	// clickstream had bounce_rate instead of sessions (column_added,
	// column_dropped, query_changed).
	// It had no index either (index_added: the default now).
	// Its expectation checked views then (expectation_changed).
	m["clickstream.yaml"] = &fstest.MapFile{Data: []byte(edit(edit(edit(edit(read("clickstream.yaml"),
		"      sessions: bigint\n", "      bounce_rate: double precision\n"), "    query: |", "    indexes: []\n    query: |"),
		"count(DISTINCT session_id) AS sessions", "avg(bounced::int)::float8 AS bounce_rate"),
		"check: sessions <= views", "check: views >= 0"))}
	// orders had a narrower window (predicate widened since), and no
	// row-count expectation (expectation_added).
	m["orders.yaml"] = &fstest.MapFile{Data: []byte(edit(edit(read("orders.yaml"), "-7)", "-3)"),
		"      each_day_loaded:\n        rows: {min: 1, max_change: 50%}\n        severity: warn\n", ""))}
	// sales: reset was allowed, and orders was an integer (retyped).
	m["sales.yaml"] = &fstest.MapFile{Data: []byte(edit(edit(read("sales.yaml"), "reset_allowed: false", "reset_allowed: true"),
		"orders: bigint", "orders: integer"))}
	// stores is new; legacy has been removed since.
	m["legacy.yaml"] = &fstest.MapFile{Data: []byte(`pipeline: legacy
tables:
  legacy_totals:
    replace_where: day >= date_add(current_date(), -1)
    columns:
      day: date
      total: bigint
    query: SELECT day, count(*) AS total FROM legacy_events GROUP BY day
`)}
	return m
}

func loadMap(t *testing.T, m fstest.MapFS) *compile.Project {
	t.Helper()
	p, ds, err := compile.Load(m, "pipelines")
	if err != nil {
		t.Fatal(err)
	}
	if ds.HasErrors() {
		t.Fatalf("specs have errors: %v", ds)
	}
	return p
}

// TestPlanSchemaRejects makes sure the schema is not vacuous: a plan with
// an unknown action, reason or change, or without a required field, fails.
func TestPlanSchemaRejects(t *testing.T) {
	sch := planSchema(t)
	good := `{"format_version":1,"spec_dir":"pipelines","at":"2026-11-29T12:00:00Z","timezone":"UTC",
		"base":{"source":"none"},"head":{"source":"worktree"},"diagnostics":[],
		"backfills":[{"file":"pipelines/backfills/b.yaml","flow":"f","where":"d >= date('2026-01-01')","reason":"r","status":"pending"}],
		"summary":{"flows":1,"definition_changes":1,"pending_backfills":1,"destructive":false},
		"basis":{"deployment":0,"specs":"x","spec_files":null,"last_refresh":null},
		"flows":[{"flow":"f","pipeline":"p","target":"t","action":"create","reasons":["FIRST_REFRESH"],"changes":["new"],"sql":[],
			"indexes":[{"kind":"added","name":"t_d_rwc_0123abcd","columns":["d"],"default":true,"sql":["CREATE INDEX ..."]}]}]}`
	validatePlanJSON(t, sch, "the minimal plan", []byte(good))
	for name, bad := range map[string][2]string{
		"unknown action":   {`"action":"create"`, `"action":"recreate"`},
		"unknown reason":   {`"FIRST_REFRESH"`, `"FIRST"`},
		"unknown change":   {`"changes":["new"]`, `"changes":["renamed"]`},
		"bad column name":  {`"changes":["new"]`, `"changes":["column_added:Uniq Users"]`},
		"format version 2": {`"format_version":1`, `"format_version":2`},
		"bad at":           {`"at":"2026-11-29T12:00:00Z"`, `"at":"yesterday"`},
		"unknown source":   {`"source":"none"`, `"source":"s3"`},
		"no flows":         {`"flows":[`, `"flaws":[`},
		"backfill status":  {`"status":"pending"`, `"status":"queued"`},
		"index kind":       {`"kind":"added"`, `"kind":"grown"`},
		"index change":     {`"changes":["new"]`, `"changes":["index_added:T D"]`},
	} {
		if !strings.Contains(good, bad[0]) {
			t.Fatalf("%s: %q not in the minimal plan", name, bad[0])
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(good, bad[0], bad[1], 1)))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// TestPlanSchemaDescribesEveryField: every JSON field the plan model can
// write is described in the schema, so the contract does not drift from
// the code (the schema allows unknown fields, so validation alone would
// not notice).
func TestPlanSchemaDescribesEveryField(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(schemas.Plan, &s); err != nil {
		t.Fatal(err)
	}
	defs := s["$defs"].(map[string]any)
	props := func(obj any) map[string]any { return obj.(map[string]any)["properties"].(map[string]any) }
	top := props(s)
	for _, c := range []struct {
		typ    reflect.Type
		schema map[string]any
	}{
		{reflect.TypeFor[compile.Plan](), top},
		{reflect.TypeFor[compile.Rev](), props(defs["rev"])},
		{reflect.TypeFor[compile.FlowPlan](), props(defs["flow"])},
		{reflect.TypeFor[compile.BackfillPlan](), props(defs["backfill"])},
		{reflect.TypeFor[predicate.Change](), props(props(defs["flow"])["window_change"])},
		{reflect.TypeFor[compile.PlanSummary](), props(top["summary"])},
		{reflect.TypeFor[compile.Basis](), props(top["basis"])},
		{reflect.TypeFor[diag.Diagnostic](), props(defs["diagnostic"])},
		{reflect.TypeFor[compile.IndexChange](), props(defs["index_change"])},
	} {
		var missing []string
		for _, name := range jsonFields(c.typ) {
			if _, ok := c.schema[name]; !ok {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s writes fields the plan schema does not describe: %v", c.typ, missing)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// The plan of specs with lint errors (what a PR comment shows then) is a
// plan like any other.
func TestNotPlannedMatchesSchema(t *testing.T) {
	_, ds, err := compile.Load(fstest.MapFS{"p.yaml": &fstest.MapFile{Data: []byte("pipeline: p\ntables:\n  t:\n    replace_where: nope\n    columns:\n      d: date\n    query: SELECT d FROM ev\n")}}, "pipelines")
	if err != nil || !ds.HasErrors() {
		t.Fatalf("want lint errors: %v %v", err, ds)
	}
	p := compile.NotPlanned("pipelines", compile.Rev{Source: "worktree"}, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), time.UTC, ds)
	validatePlan(t, planSchema(t), "the plan of specs with errors", p)
}

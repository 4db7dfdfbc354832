package compile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// decideCase is one case of the decision corpus: testdata/decide/<case>/
// holds case.json (a flow, its state, what was asked and what was observed)
// and want.json (DecideRefresh's decision); -update rewrites want.json.
type decideCase struct {
	Spec     string       `json:"spec"` // the flow t's spec file
	At       time.Time    `json:"at"`
	Mode     string       `json:"mode"` // window (default), override, full
	State    *decideState `json:"state"`
	Observed Observation  `json:"observed"`
}

// decideState is the flow's state; "same" stands for the spec's own query
// fingerprint and columns, and the last window is given as CEL.
type decideState struct {
	Columns          string `json:"columns"`           // "same", or a JSON list of {name, type}
	QueryFingerprint string `json:"query_fingerprint"` // "same", or another
	PredicateCEL     string `json:"predicate_cel"`
	Determinism      string `json:"determinism"`
	NeverRefreshed   bool   `json:"never_refreshed"`
}

type decideWant struct {
	Action         Action   `json:"action"`
	Reasons        []Reason `json:"reasons"`
	Columns        []string `json:"columns,omitempty"`
	Capture        bool     `json:"capture"`
	NotIncremental string   `json:"not_incremental,omitempty"`
}

// TestDecisionCorpus runs every case of testdata/decide. Together they
// cover every action and every reason DecideRefresh gives, and each input
// it branches on; what the capture finds afterwards (external changes,
// changed partitions) is the refresh's, in run.
func TestDecisionCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/decide/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := decideOne(t, dir)
			seen["action "+string(got.Action)] = true
			for _, r := range got.Reasons {
				seen["reason "+string(r)] = true
			}
			b, _ := json.MarshalIndent(got, "", "  ")
			golden(t, filepath.Join(dir, "want.json"), string(b)+"\n")
		})
	}
	for _, w := range []Action{ActionCreate, ActionIncremental, ActionRecomputeWindow, ActionFullRefresh, ActionBackfill} {
		if !seen["action "+string(w)] {
			t.Errorf("no case decides %s", w)
		}
	}
	for _, r := range []Reason{ReasonFirstRefresh, ReasonQueryChanged, ReasonPriorNotDeterministic,
		ReasonPriorPredicateMissing, ReasonStaleTargetData, ReasonCannotPushPredicate,
		ReasonBackfill, ReasonFullRefreshRequested} {
		if !seen["reason "+string(r)] {
			t.Errorf("no case gives %s", r)
		}
	}
}

func decideOne(t *testing.T, dir string) decideWant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c decideCase
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	p, ds, err := Load(fstest.MapFS{"p.yaml": &fstest.MapFile{Data: []byte(c.Spec)}}, "pipelines")
	if err != nil || ds.HasErrors() {
		t.Fatalf("the spec: %v %v", err, ds)
	}
	f := p.Flow("t")
	if f == nil {
		t.Fatal("the spec has no flow t")
	}
	window, err := f.Predicate.Resolve(predicate.Resolution{Now: c.At, Zone: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	in := RefreshInput{Window: window, Override: c.Mode == "override", Full: c.Mode == "full", Observed: c.Observed}
	if c.State != nil {
		in.State = decideFlowState(t, f, c.State)
	}
	dec := f.DecideRefresh(in)
	got := decideWant{Action: dec.Action, Reasons: dec.Reasons, Capture: dec.Capture, NotIncremental: dec.NotIncremental}
	for _, ch := range dec.Columns {
		got.Columns = append(got.Columns, ch.Change())
	}
	return got
}

func decideFlowState(t *testing.T, f *Flow, s *decideState) FlowState {
	st := FlowState{Found: true, LastRefreshed: !s.NeverRefreshed, QueryFingerprint: s.QueryFingerprint,
		PredicateCEL: s.PredicateCEL, Determinism: s.Determinism, Columns: f.Columns()}
	if s.QueryFingerprint == "same" {
		st.QueryFingerprint = f.Fingerprint()
	}
	if s.Columns != "same" && s.Columns != "" {
		if err := json.Unmarshal([]byte(s.Columns), &st.Columns); err != nil {
			t.Fatalf("state columns: %v", err)
		}
	}
	if st.Determinism == "" {
		st.Determinism = "per_refresh"
	}
	return st
}

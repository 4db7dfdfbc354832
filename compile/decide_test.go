package compile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rwc-dev/rwc/spec/predicate"
)

// decideCase is one case of the decision corpus: testdata/decide/<case>/
// holds case.json (a flow, its state, what was asked, what was observed and,
// for an incremental refresh, what its capture found) and want.json (the
// decision of DecideRefresh, then DecideCapture, and the statements it
// writes); -update rewrites want.json.
type decideCase struct {
	Spec     string       `json:"spec"` // the flow t's spec file
	At       time.Time    `json:"at"`
	Mode     string       `json:"mode"` // window (default), override, full
	State    *decideState `json:"state"`
	Observed Observation  `json:"observed"`
	Captured *Captured    `json:"captured"`
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
	Partitions     []string `json:"partitions,omitempty"`
	Narrowed       string   `json:"narrowed,omitempty"`
	Unchanged      bool     `json:"unchanged,omitempty"`
	Await          *Await   `json:"await,omitempty"`
	SQL            []string `json:"sql"`
}

// TestDecisionCorpus runs every case of testdata/decide. Together they
// cover every action and every reason the decision gives, every way the
// capture's decision waits for the target, and each input they branch on.
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
			if got.Await != nil {
				seen["await "+got.Await.String()] = true
			}
			if got.Unchanged {
				seen["unchanged"] = true
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // the SQL reads as it is
			enc.SetIndent("", "  ")
			if err := enc.Encode(got); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "want.json"), b.String())
		})
	}
	for _, w := range []Action{ActionCreate, ActionIncremental, ActionRecomputeWindow, ActionFullRefresh, ActionBackfill} {
		if !seen["action "+string(w)] {
			t.Errorf("no case decides %s", w)
		}
	}
	for _, r := range []Reason{ReasonFirstRefresh, ReasonQueryChanged, ReasonPriorNotDeterministic,
		ReasonPriorPredicateMissing, ReasonStaleTargetData, ReasonCannotPushPredicate,
		ReasonBackfill, ReasonFullRefreshRequested, ReasonExternalChange} {
		if !seen["reason "+string(r)] {
			t.Errorf("no case gives %s", r)
		}
	}
	for _, w := range []string{"await before_write", "await after_write", "await reason", "unchanged"} {
		if !seen[w] {
			t.Errorf("no case decides %s", w)
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
	if c.Captured != nil {
		dec = f.DecideCapture(dec, window, *c.Captured)
	}
	got := decideWant{Action: dec.Action, Reasons: dec.Reasons, Capture: dec.Capture, NotIncremental: dec.NotIncremental,
		Partitions: dec.Partitions, Unchanged: dec.Unchanged, SQL: []string{}}
	for _, ch := range dec.Columns {
		got.Columns = append(got.Columns, ch.Change())
	}
	if dec.Narrowed != nil {
		got.Narrowed = dec.Narrowed.Root.CEL()
	}
	if dec.Await != AwaitNothing {
		got.Await = &dec.Await
	}
	s, err := f.Writes(dec, window, in.Full, in.Observed)
	if err != nil {
		t.Fatal(err)
	}
	got.SQL = append(got.SQL, s.List()...)
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

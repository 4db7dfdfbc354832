package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/pgtest/cutproxy"
)

// The plan is the contract: every statement a saved plan shows for a flow
// is, byte for byte, a statement rwc apply of that plan sends to the server
// (seen on the wire, through a proxy), and rwc refresh --explain prints the
// same DELETE and INSERT. An incremental refresh's statements are narrowed
// to the partitions whose source rows changed: the plan, having a
// database, finds them as the refresh does.
func TestPlanIsWhatApplySends(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	protected := strings.Replace(wholeSpec, "    columns:", "    properties:\n      reset_allowed: false\n    columns:", 1)
	for _, tc := range []struct {
		name    string
		sources string // SQL run first
		setup   string // SQL run after the first apply
		before  string // a spec applied first ("": none)
		spec    string
		flag    string // for apply
		action  compile.Action
		// partitions: those an incremental plan narrows to; writes: whether
		// the plan shows a DELETE and an INSERT.
		partitions []string
		nothing    bool
	}{
		{name: "first create", spec: wholeSpec, action: compile.ActionCreate},
		{name: "query changed", before: wholeSpec, spec: strings.Replace(wholeSpec, "SELECT d, k, v FROM", "SELECT d, k, v * 2 AS v FROM", 1),
			action: compile.ActionRecomputeWindow},
		{name: "types disagree", sources: `CREATE TABLE evts (d timestamp, k text, v integer); INSERT INTO evts VALUES ('2026-03-06 10:00', 'a', 1)`,
			before: strings.Replace(wholeSpec, "FROM ev", "FROM evts", 1), spec: strings.Replace(strings.Replace(wholeSpec, "FROM ev", "FROM evts", 1), "v FROM", "v + 1 AS v FROM", 1),
			action: compile.ActionRecomputeWindow},
		{name: "protected window widened", before: protected,
			setup: `DELETE FROM ev WHERE d < '2026-03-03'`,
			spec:  strings.Replace(protected, "d >= date('2026-03-05')", "d >= date('2026-03-01')", 1), flag: "--allow-loss",
			action: compile.ActionRecomputeWindow},
		{name: "the window after the query only", sources: `CREATE TABLE evts (d timestamp, v integer);
			INSERT INTO evts VALUES ('2026-03-01 10:00', 1), ('2026-02-28 12:00', 2), ('2026-03-02', 3)`,
			spec:   "pipeline: p\ntables:\n  t:\n    replace_where: d <= date('2026-03-01')\n    columns:\n      d: date\n      v: integer\n    query: SELECT d, v FROM evts\n",
			action: compile.ActionCreate},
		{name: "incremental, one day changed", before: wholeSpec, setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-07'`,
			spec: wholeSpec, action: compile.ActionIncremental, partitions: []string{"2026-03-07"}},
		{name: "incremental, two days changed", before: wholeSpec, setup: `UPDATE ev SET v = v + 1 WHERE d IN ('2026-03-06', '2026-03-09'); DELETE FROM ev WHERE d = '2026-03-10'`,
			spec: wholeSpec, action: compile.ActionIncremental, partitions: []string{"2026-03-06", "2026-03-09", "2026-03-10"}},
		{name: "incremental, nothing changed", before: wholeSpec, spec: wholeSpec, action: compile.ActionIncremental, nothing: true},
		{name: "incremental, the target changed", before: wholeSpec, setup: `DELETE FROM t WHERE d = '2026-03-08'`,
			spec: wholeSpec, action: compile.ActionRecomputeWindow},
		{name: "incremental, a source and the target changed", before: wholeSpec,
			setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-07'; UPDATE t SET v = 0 WHERE d = '2026-03-09'`,
			spec:  wholeSpec, action: compile.ActionRecomputeWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			if tc.sources != "" {
				e.exec(tc.sources)
			}
			if tc.before != "" {
				dir := writeSpecs(t, map[string]string{"p.yaml": tc.before})
				mustApply(t, e, dir)
			}
			if tc.setup != "" {
				e.exec(tc.setup)
			}
			dir := writeSpecs(t, map[string]string{"p.yaml": tc.spec})
			file := filepath.Join(t.TempDir(), "plan.json")
			if code, out := runRWC(t, e.dsn, "plan", "--out", file, dir); code != 0 && code != 2 {
				t.Fatalf("rwc plan: exit %d:\n%s", code, out)
			}
			plan := readPlanFile(t, file)
			fp := plan.Flows[0]
			if fp.Action != tc.action {
				t.Fatalf("planned %s (%v), want %s", fp.Action, fp.Reasons, tc.action)
			}
			if !slices.Equal(fp.Partitions, tc.partitions) {
				t.Errorf("planned partitions %v, want %v", fp.Partitions, tc.partitions)
			}
			if writes := slices.ContainsFunc(fp.SQL, func(s string) bool { return strings.HasPrefix(s, "DELETE") }); writes == tc.nothing {
				t.Errorf("the plan shows a DELETE: %v, want %v:\n%s", writes, !tc.nothing, strings.Join(fp.SQL, "\n"))
			}
			// Before the apply: an incremental refresh finds nothing changed after it.
			_, explained := runRWC(t, e.dsn, "refresh", "t", "--explain", "--specs", dir)
			for _, stmt := range fp.SQL {
				if strings.HasPrefix(stmt, "DELETE") || strings.HasPrefix(stmt, "INSERT") {
					if !strings.Contains(explained, stmt+";\n") {
						t.Errorf("rwc refresh --explain does not print the plan's\n%s\nit printed:\n%s", stmt, explained)
					}
				}
			}
			sent := appliedThroughProxy(t, e, file, tc.flag)
			if tc.nothing && slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, `DELETE FROM "public"."t"`) }) {
				t.Errorf("rwc apply deleted from the target, whose plan writes nothing:\n%s", strings.Join(sent, "\n---\n"))
			}
			for _, stmt := range fp.SQL {
				if !sentOne(sent, stmt) {
					t.Errorf("the plan shows a statement rwc apply did not send:\n%s\nsent:\n%s", stmt, strings.Join(sent, "\n---\n"))
				}
			}
		})
	}
}

func readPlanFile(t *testing.T, file string) compile.Plan {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var p compile.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Flows) != 1 {
		t.Fatalf("plan of %d flows, want 1", len(p.Flows))
	}
	return p
}

// appliedThroughProxy runs rwc apply of the saved plan through a proxy and
// returns the text of every statement it sent.
func appliedThroughProxy(t *testing.T, e *env, file, flag string) []string {
	t.Helper()
	up, err := cutproxy.Upstream(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cutproxy.Start(up, cutproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dsn, err := p.DSN(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "--allow-dirty", file}
	if flag != "" {
		args = append(args, flag)
	}
	if code, out := runRWC(t, dsn, args...); code != 0 {
		t.Fatalf("rwc apply of the plan: exit %d:\n%s", code, out)
	}
	var sent []string
	for _, b := range p.Log() {
		sent = append(sent, b.SQL)
	}
	return sent
}

// sentOne reports whether stmt was sent as a statement of its own, or as
// one of a simple Query's several.
func sentOne(sent []string, stmt string) bool {
	for _, s := range sent {
		for _, part := range []string{s, strings.TrimSuffix(s, ";")} {
			if part == stmt || strings.HasPrefix(part, stmt+";") || strings.HasSuffix(part, "; "+stmt) || strings.Contains(part, "; "+stmt+";") {
				return true
			}
		}
	}
	return false
}

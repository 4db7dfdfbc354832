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
	// Expectations of every kind: the checks the plan shows are those the
	// refresh sends (the samples only when one fails: none does here).
	dim := `CREATE TABLE dim (k text); INSERT INTO dim VALUES ('a'), ('b')`
	expected := withExpect(wholeSpec, `      positive:
        check: v >= 0 && d <= current_date()
      keyed:
        not_null: [d, k]
      one_per_day:
        unique: [d, k]
        across_table: true
      steady:
        rows: {min: 1, max_change: 90%}
      known:
        relationships: {column: k, to: dim.k}
        severity: warn
`)
	partWhole := strings.Replace(wholeSpec, "    query: |", "    partitioning: {by: d, interval: day}\n    query: |", 1)
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
		{name: "expectations, window", sources: dim, before: wholeSpec, spec: strings.Replace(expected, "SELECT d, k, v FROM", "SELECT d, k, v + 1 AS v FROM", 1),
			action: compile.ActionRecomputeWindow},
		{name: "expectations, incremental", sources: dim, before: expected, setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-07'`,
			spec: expected, action: compile.ActionIncremental, partitions: []string{"2026-03-07"}},
		{name: "expectations, a source and the target changed", sources: dim, before: expected,
			setup: `UPDATE ev SET v = v + 1 WHERE d = '2026-03-07'; UPDATE t SET v = 0 WHERE d = '2026-03-09'`,
			spec:  expected, action: compile.ActionRecomputeWindow},
		{name: "expectations, partitioned", sources: dim,
			before: strings.Replace(expected, "    query: |", "    partitioning: {by: d, interval: day}\n    query: |", 1),
			spec:   strings.Replace(strings.Replace(expected, "    query: |", "    partitioning: {by: d, interval: day}\n    query: |", 1), "SELECT d, k, v FROM", "SELECT d, k, v + 1 AS v FROM", 1),
			action: compile.ActionRecomputeWindow},
		{name: "partitioned, a DEFAULT partition and a partition to make", before: partWhole,
			setup: `CREATE TABLE t_default PARTITION OF t DEFAULT; DROP TABLE t_p20260307`, spec: partWhole, action: compile.ActionRecomputeWindow},
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
			if strings.HasSuffix(tc.name, "a source and the target changed") && !slices.ContainsFunc(fp.Notes, func(n string) bool { return strings.Contains(n, "on top") }) {
				t.Errorf("the plan does not write the whole window on top of the changed partitions: %v", fp.Notes)
			}
			checks := slices.ContainsFunc(fp.SQL, func(s string) bool { return strings.Contains(s, "count(*) FILTER (WHERE") })
			if checks != strings.HasPrefix(tc.name, "expectations") {
				t.Errorf("the plan shows expectation checks: %v:\n%s", checks, strings.Join(fp.SQL, "\n"))
			}
			if strings.HasSuffix(tc.name, "a partition to make") && !slices.ContainsFunc(fp.SQL, func(s string) bool { return strings.Contains(s, `ATTACH PARTITION "public"."t_p20260307"`) }) {
				t.Errorf("the plan does not make the missing partition:\n%s", strings.Join(fp.SQL, "\n"))
			}
			sent := appliedThroughProxy(t, e, file, tc.flag)
			for _, s := range sent {
				if strings.Contains(s, "\n) AS w") && !slices.Contains(fp.SQL, s) {
					t.Errorf("rwc apply sent checks the plan does not show:\n%s", s)
				}
			}
			if tc.nothing && slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, `DELETE FROM "public"."t"`) }) {
				t.Errorf("rwc apply deleted from the target, whose plan writes nothing:\n%s", strings.Join(sent, "\n---\n"))
			}
			for _, stmt := range fp.SQL {
				if !sentOne(sent, stmt) {
					t.Errorf("the plan shows a statement rwc apply did not send:\n%s\nsent:\n%s", stmt, strings.Join(sent, "\n---\n"))
				}
			}
			// And the other way: every DELETE from and INSERT into the
			// target that apply sent, the plan showed.
			for _, s := range sent {
				for _, part := range strings.Split(s, "; ") {
					part = strings.TrimSuffix(part, ";")
					if strings.HasPrefix(part, `DELETE FROM "public"."t"`) || strings.HasPrefix(part, `INSERT INTO "public"."t"`) || strings.HasPrefix(part, `WITH ins AS (INSERT INTO "public"."t"`) {
						if !slices.Contains(fp.SQL, part) {
							t.Errorf("rwc apply sent a statement the plan does not show:\n%s\nthe plan:\n%s", part, strings.Join(fp.SQL, "\n"))
						}
					}
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
	p, dsn := proxied(t, e.dsn, cutproxy.Options{})
	defer p.Close()
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

// The same contract for every flow of the example pipelines (with their
// sample data) and of the lint corpus's valid cases that have sources
// (sources.sql beside the specs): a first apply, then, after the sources
// changed (changes, for the examples) or did not, a second one, each
// planned, explained and applied through the proxy.
func TestPlanIsWhatApplySendsCorpus(t *testing.T) {
	t.Parallel()
	rwcBinary(t)
	examples, _ := filepath.Glob("../pipelines/*.yaml")
	cases := map[string][]string{"example pipelines": examples}
	sources := map[string]string{"example pipelines": "../pipelines/sample-data.sql"}
	changes := map[string]string{"example pipelines": `UPDATE orders_fct SET qty = qty + 1 WHERE date = current_date - 1;
		UPDATE sales_raw SET amount = amount + 1 WHERE date IN (current_date, current_date - 2);
		UPDATE store_dim SET city = 'Porto' WHERE store_id = 3;
		DELETE FROM clickstream_events WHERE event_date = current_date AND event_id % 10 = 0`}
	lint, _ := filepath.Glob("../compile/testdata/lint/*/sources.sql")
	for _, src := range lint {
		name := filepath.Base(filepath.Dir(src))
		cases[name], _ = filepath.Glob(filepath.Join(filepath.Dir(src), "*.yaml"))
		sources[name] = src
	}
	if len(examples) == 0 || len(lint) == 0 {
		t.Fatalf("no cases: %d example pipelines, %d lint cases with sources", len(examples), len(lint))
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.exec(readText(t, sources[name]))
			specs := map[string]string{}
			for _, f := range files {
				specs[filepath.Base(f)] = readText(t, f)
			}
			dir := writeSpecs(t, specs)
			planExplainApply(t, e, dir)
			if changes[name] != "" {
				e.exec(changes[name])
			}
			planExplainApply(t, e, dir)
		})
	}
}

func readText(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// planExplainApply plans dir, explains each flow, applies the saved plan
// through the proxy, and checks that every statement the plan shows was
// sent, and that --explain printed each DELETE and INSERT.
func planExplainApply(t *testing.T, e *env, dir string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plan.json")
	if code, out := runRWC(t, e.dsn, "plan", "--out", file, dir); code != 0 && code != 2 {
		t.Fatalf("rwc plan: exit %d:\n%s", code, out)
	}
	var plan compile.Plan
	if err := json.Unmarshal([]byte(readText(t, file)), &plan); err != nil {
		t.Fatal(err)
	}
	for _, fp := range plan.Flows {
		_, explained := runRWC(t, e.dsn, "refresh", dir, fp.Flow, "--explain")
		for _, stmt := range fp.SQL {
			if (strings.HasPrefix(stmt, "DELETE") || strings.HasPrefix(stmt, "INSERT") || strings.HasPrefix(stmt, "WITH")) && !strings.Contains(explained, stmt+";\n") {
				t.Errorf("%s: rwc refresh --explain does not print the plan's\n%s\nit printed:\n%s", fp.Flow, stmt, explained)
			}
		}
	}
	sent := appliedThroughProxy(t, e, file, "")
	for _, fp := range plan.Flows {
		t.Logf("%s: %s %v, partitions %v", fp.Flow, fp.Action, fp.Reasons, fp.Partitions)
		for _, stmt := range fp.SQL {
			if !sentOne(sent, stmt) {
				t.Errorf("%s: the plan shows a statement rwc apply did not send:\n%s", fp.Flow, stmt)
			}
		}
	}
}

// A target rwc apply would refuse (a table it did not create holds the
// name, or its own was dropped and created again) is refused by the plan
// too, in apply's words, with no statement: the plan shows what apply
// does.
func TestPlanShowsApplysRefusal(t *testing.T) {
	t.Parallel()
	// u, t's copy reading t's target: apply skips it when it refuses t.
	u := strings.NewReplacer("pipeline: p\ntables:\n", "", "  t:", "  u:", "FROM ev", "FROM t").Replace(dailySpec)
	for _, c := range []struct {
		name, before, spec, want, code string
	}{
		{"recreated", `DROP TABLE t; CREATE TABLE t (d date, k text, v integer)`, dailySpec, "was dropped and created again outside rwc", "RW503"},
		{"not rwc's", `DELETE FROM rwc.flows WHERE flow = 't'`, dailySpec, "already exists and was not created by rwc", "RW503"},
		{"not partitioned", `SELECT 1`, partSpec, "asks for a partitioned target, but", "RW503"},
		{"nondeterministic collation", ciCollation, strings.Replace(dailySpec, "-2)", "-2) && k != ''\n    partition_by: d", 1), "under the nondeterministic collation ci", "RW504"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newDailyEnv(t)
			mustApply(t, e, writeSpecs(t, map[string]string{"p.yaml": dailySpec + u}))
			dir := writeSpecs(t, map[string]string{"p.yaml": c.spec + u, "backfills/hist.yaml": histBackfill})
			e.exec(c.before)
			file := filepath.Join(t.TempDir(), "plan.json")
			if code, out := runRWC(t, e.dsn, "plan", "--out", file, dir); code != 1 || !strings.Contains(out, "error "+c.code) || strings.Contains(out, "flow t: flow t:") {
				t.Fatalf("rwc plan exited %d, want 1 with %s, naming the flow once:\n%s", code, c.code, out)
			}
			var saved compile.Plan
			if err := json.Unmarshal([]byte(readText(t, file)), &saved); err != nil || len(saved.Flows) != 2 {
				t.Fatalf("plan of %d flows (%v), want t and u", len(saved.Flows), err)
			}
			fp, fu := saved.Flows[0], saved.Flows[1]
			if len(saved.Backfills) != 1 || !strings.Contains(saved.Backfills[0].Held, "rwc apply does not run it: flow t is refused") {
				t.Errorf("plan of t's backfill: %+v", saved.Backfills)
			}
			if fu.Flow != "u" || fu.Action != compile.ActionSkipped || len(fu.SQL) != 0 || !slices.ContainsFunc(fu.Notes, func(n string) bool { return strings.Contains(n, "rwc apply skips it: it reads the target of t") }) {
				t.Errorf("plan of u, which reads t: %s %v %v", fu.Action, fu.Notes, fu.SQL)
			}
			if fp.Action != compile.ActionRefused || !strings.Contains(fp.Refused, c.want) || len(fp.SQL) != 0 {
				t.Fatalf("plan: action %s, refused %q, %d statements; want refused, %q, none", fp.Action, fp.Refused, len(fp.SQL), c.want)
			}
			code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", dir)
			if code == 0 || !strings.Contains(out, fp.Refused) || !strings.Contains(out, "skipped: it reads the target of t") {
				t.Fatalf("rwc apply exited %d, want a failure in the plan's words (%s), u skipped:\n%s", code, fp.Refused, out)
			}
			if _, text := runRWC(t, e.dsn, "plan", dir); !strings.Contains(text, "rwc apply refuses it: "+fp.Refused) {
				t.Errorf("rwc plan does not say it:\n%s", text)
			}
			_, explained := runRWC(t, e.dsn, "refresh", "t", "--explain", "--specs", dir)
			if !strings.Contains(explained, "the refresh refuses it, changing nothing: "+fp.Refused) || strings.Contains(explained, "DELETE") {
				t.Errorf("rwc refresh --explain does not show the refusal:\n%s", explained)
			}
			// The saved plan refused the table under the name: once another
			// is there, it no longer says what apply would do.
			e.exec(`DROP TABLE t; DELETE FROM rwc.flows`)
			if code, out := runRWC(t, e.dsn, "apply", "--allow-dirty", file); code == 0 || !strings.Contains(out, "the table under flow t's target") {
				t.Errorf("rwc apply of the saved plan, the table it refused gone, exited %d:\n%s", code, out)
			}
		})
	}
}

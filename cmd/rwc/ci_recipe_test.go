package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The CI recipe: docs/ci/github-actions.yml (rwc.yml: lint, plan, apply)
// and docs/ci/github-actions-comment.yml (rwc-comment.yml: the plan
// comment). These tests read them as GitHub reads them; TestCIRecipeSteps
// (ci_steps_test.go) runs their steps.
const (
	recipeFile        = "../../docs/ci/github-actions.yml"
	recipeCommentFile = "../../docs/ci/github-actions-comment.yml"
)

type ghWorkflow struct {
	Name        string               `yaml:"name"`
	On          map[string]yaml.Node `yaml:"on"`
	Permissions map[string]string    `yaml:"permissions"`
	Env         map[string]string    `yaml:"env"`
	Jobs        map[string]ghJob     `yaml:"jobs"`
}

type ghJob struct {
	If          string            `yaml:"if"`
	Permissions map[string]string `yaml:"permissions"`
	Environment string            `yaml:"environment"`
	Concurrency struct {
		Group            string `yaml:"group"`
		CancelInProgress bool   `yaml:"cancel-in-progress"`
	} `yaml:"concurrency"`
	Env   map[string]string `yaml:"env"`
	Steps []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name string            `yaml:"name"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

func (s ghStep) label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Uses
}

func readWorkflow(t *testing.T, path string) (*ghWorkflow, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf ghWorkflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("%s is not valid YAML: %v", path, err)
	}
	return &wf, string(raw)
}

// TestCIRecipe checks that every rwc invocation in the recipe names a real
// command with real flags, and that each one that needs a database is
// given one: in CI (CI=true in GitHub Actions) rwc refuses to fall back to
// the local PostgreSQL or, for plan, to nothing, so a step without
// RWC_DATABASE_URL must plan with --no-database.
func TestCIRecipe(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range []string{recipeFile, recipeCommentFile} {
		wf, _ := readWorkflow(t, path)
		for job, j := range wf.Jobs {
			for _, s := range j.Steps {
				for _, line := range strings.Split(s.Run, "\n") {
					fields := strings.Fields(line)
					if len(fields) == 0 || fields[0] != "rwc" {
						continue
					}
					var args []string
					for _, f := range fields[1:] {
						if f == ">" || f == "|" || f == "&&" || f == "||" {
							break
						}
						args = append(args, f)
					}
					root := newRoot(io.Discard)
					cmd, rest, err := root.Find(args)
					if err != nil || cmd == root {
						t.Errorf("job %s: %q is not an rwc command", job, line)
						continue
					}
					if err := cmd.ParseFlags(rest); err != nil {
						t.Errorf("job %s: %q: %v", job, line, err)
					}
					seen[cmd.Name()] = true
					_, hasDB := s.Env["RWC_DATABASE_URL"]
					noDB, _ := cmd.Flags().GetBool("no-database")
					switch cmd.Name() {
					case "plan":
						if hasDB == noDB {
							t.Errorf("job %s: %q: a plan needs RWC_DATABASE_URL in the step's env or --no-database, not both or neither", job, line)
						}
					case "apply", "refresh", "status", "events":
						if !hasDB {
							t.Errorf("job %s: %q needs RWC_DATABASE_URL in the step's env", job, line)
						}
					}
				}
			}
		}
	}
	for _, want := range []string{"lint", "plan", "apply"} {
		if !seen[want] {
			t.Errorf("the CI recipe never runs rwc %s", want)
		}
	}
}

// TestCIRecipeWorkflows checks what issue #16 asked of the recipe, which
// a copy must keep: the token reads the repository and no more, except
// where a comment is posted; pull requests' jobs never name the deploying
// secret, which only the apply job (of a protected environment) reads; the
// apply runs on merge, on a schedule and by hand, one at a time; no
// expression is pasted into a script (a branch name or a title would be
// code there); the binary is installed the same way in every job.
func TestCIRecipeWorkflows(t *testing.T) {
	wf, _ := readWorkflow(t, recipeFile)
	cw, _ := readWorkflow(t, recipeCommentFile)
	for _, w := range []*ghWorkflow{wf, cw} {
		if len(w.Permissions) != 1 || w.Permissions["contents"] != "read" {
			t.Errorf("workflow %s: permissions %v, want contents: read alone", w.Name, w.Permissions)
		}
		for name, j := range w.Jobs {
			for scope, level := range j.Permissions {
				if level == "write" && !(w == cw && scope == "pull-requests") {
					t.Errorf("workflow %s, job %s: %s: write; only the comment job writes (pull-requests)", w.Name, name, scope)
				}
			}
			for _, s := range j.Steps {
				if strings.Contains(s.Run, "${{") {
					t.Errorf("workflow %s, job %s, step %q: an expression in run: pass it through env:", w.Name, name, s.label())
				}
			}
		}
	}
	for _, ev := range []string{"pull_request", "push", "schedule", "workflow_dispatch"} {
		if _, ok := wf.On[ev]; !ok {
			t.Errorf("rwc.yml does not run on %s", ev)
		}
	}
	if _, ok := wf.On["pull_request_target"]; ok {
		t.Error("rwc.yml runs on pull_request_target: a fork's specs would run with the base repository's secrets")
	}
	var crons []struct {
		Cron string `yaml:"cron"`
	}
	if n := wf.On["schedule"]; n.Decode(&crons) != nil || len(crons) == 0 || crons[0].Cron == "" {
		t.Error("rwc.yml has no schedule cron")
	}
	var runs struct {
		Workflows []string `yaml:"workflows"`
	}
	if n := cw.On["workflow_run"]; n.Decode(&runs) != nil || len(runs.Workflows) != 1 || runs.Workflows[0] != wf.Name {
		t.Errorf("rwc-comment.yml runs after %v, want after %q (rwc.yml's name)", runs.Workflows, wf.Name)
	}

	deploySecret := regexp.MustCompile(`secrets\.RWC_DATABASE_URL\b`)
	var install []string
	for name, j := range wf.Jobs {
		raw, err := yaml.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		onPR := strings.Contains(j.If, "== 'pull_request'")
		switch {
		case onPR && deploySecret.Match(raw):
			t.Errorf("job %s runs on pull requests and names secrets.RWC_DATABASE_URL, the deploying role's", name)
		case !onPR && deploySecret.Match(raw):
			if j.Environment != "production" {
				t.Errorf("job %s reads secrets.RWC_DATABASE_URL outside the protected environment production", name)
			}
			if j.Concurrency.Group == "" || j.Concurrency.CancelInProgress {
				t.Errorf("job %s: concurrency %+v, want a group whose apply is never cancelled", name, j.Concurrency)
			}
		}
		for _, s := range j.Steps {
			if s.Name == "Install rwc" {
				install = append(install, s.Run)
			}
		}
	}
	if len(install) != len(wf.Jobs) {
		t.Errorf("%d of %d jobs have an Install rwc step", len(install), len(wf.Jobs))
	}
	for _, r := range install[1:] {
		if r != install[0] {
			t.Error("the jobs' Install rwc steps differ: keep them one copy")
		}
	}
}

package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCIRecipe parses docs/ci/github-actions.yml and checks that every rwc
// invocation in it names a real command with real flags, and that each one
// that needs a database is given one: in CI (CI=true in GitHub Actions) rwc
// refuses to fall back to the local PostgreSQL or, for plan, to nothing,
// so a step without RWC_DATABASE_URL must plan with --no-database.
func TestCIRecipe(t *testing.T) {
	raw, err := os.ReadFile("../../docs/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string            `yaml:"run"`
				Env map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("the workflow is not valid YAML: %v", err)
	}
	seen := map[string]bool{}
	for job, j := range wf.Jobs {
		for _, s := range j.Steps {
			for _, line := range strings.Split(s.Run, "\n") {
				fields := strings.Fields(line)
				if len(fields) == 0 || fields[0] != "rwc" {
					continue
				}
				var args []string
				for _, f := range fields[1:] {
					if f == ">" || f == "|" || f == "&&" {
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
	for _, want := range []string{"lint", "plan", "apply"} {
		if !seen[want] {
			t.Errorf("the CI recipe never runs rwc %s", want)
		}
	}
}

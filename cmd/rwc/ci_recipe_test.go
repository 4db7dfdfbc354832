package main

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCIRecipe parses docs/ci/github-actions.yml and checks that every rwc
// invocation in it names a real command with real flags.
func TestCIRecipe(t *testing.T) {
	raw, err := os.ReadFile("../../docs/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
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
				root := newRoot()
				cmd, rest, err := root.Find(args)
				if err != nil || cmd == root {
					t.Errorf("job %s: %q is not an rwc command", job, line)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("job %s: %q: %v", job, line, err)
				}
				seen[cmd.Name()] = true
			}
		}
	}
	for _, want := range []string{"lint", "plan", "apply"} {
		if !seen[want] {
			t.Errorf("the CI recipe never runs rwc %s", want)
		}
	}
}

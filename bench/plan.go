package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rwc-dev/rwc/internal/bigproject"
)

// benchPlan times what a pull request's CI job runs: the rwc binary
// planning a 500-flow project (25 pipelines × 20 flows, 100 of them changed)
// against the specs at a git revision, as a whole process — start-up,
// reading git, loading and analysing both sides, building and printing the
// plan. No database is named, and rwc plan never starts one.
func benchPlan(rwcBin string, rounds int) error {
	dir, err := os.MkdirTemp("", "rwc-bench-plan-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	specs := filepath.Join(dir, "pipelines")
	write := func(changed bool) error {
		if err := os.MkdirAll(specs, 0o755); err != nil {
			return err
		}
		for name, f := range bigproject.Files(25, 20, changed) {
			if err := os.WriteFile(filepath.Join(specs, name), f.Data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=bench", "-c", "user.email=bench@localhost"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
		return nil
	}
	if err := write(false); err != nil {
		return err
	}
	// A pull request's CI job plans in a checkout of the whole repository:
	// 20,000 other files, in 200 directories, beside the specs.
	for d := 0; d < 200; d++ {
		sub := filepath.Join(dir, "src", fmt.Sprintf("module%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte(fmt.Sprintf("package module%03d // %d\n", d, f)), 0o644); err != nil {
				return err
			}
		}
	}
	if err := git("init", "-q"); err != nil {
		return err
	}
	if err := git("add", "."); err != nil {
		return err
	}
	if err := git("commit", "-q", "-m", "base"); err != nil {
		return err
	}
	if err := write(true); err != nil {
		return err
	}
	var times []time.Duration
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(rwcBin, "plan", "--no-database", "--base", "HEAD", "--format", "json", specs)
		cmd.Dir = dir
		start := time.Now()
		out, err := cmd.CombinedOutput()
		times = append(times, time.Since(start))
		if err != nil {
			return fmt.Errorf("rwc plan: %v\n%.2000s", err, out)
		}
	}
	fmt.Printf("\nrwc plan --base HEAD of 500 flows (100 changed) in a repository of 20,000 other files, the whole process, median of %d runs: %s (goal: under 1 s)\n",
		rounds, median(times).Round(time.Millisecond))
	return nil
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// benchFixed measures the fixed cost of rwc apply (issue #17): the whole
// process of an apply of one flow whose sources did not change, from a
// git repository holding the bench's spec (so the deployment records a
// commit, as in CI). Each binary (-rwc, and -baseline when given) applies
// a flow of its own over the same sources, twice untimed (the first
// creates the target), then the binaries alternate round by round. It
// reports, per binary, the medians of the wall time, the CPU time the
// process used (user + system), and the refresh transaction as the event
// log records it (milliseconds); the rest of the wall time is the fixed
// cost around the refresh.
func benchFixed(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin, baseline string, rounds int) error {
	type subject struct {
		name, bin, flow, dir string
		wall, cpu, inTx      []time.Duration
	}
	subjects := []*subject{{name: "-rwc", bin: rwcBin, flow: "sales_fixed"}}
	if baseline != "" {
		abs, err := filepath.Abs(baseline)
		if err != nil {
			return err
		}
		subjects = append(subjects, &subject{name: "-baseline", bin: abs, flow: "sales_fixed_baseline"})
	}
	for _, s := range subjects {
		s.dir = filepath.Join(tmp, "repo-"+s.flow)
		if err := committedSpec(s.dir, strings.Replace(spec, "sales_enriched", s.flow, 1)); err != nil {
			return err
		}
		for i := 0; i < 2; i++ {
			if _, err := applyIn(s.bin, dsn, s.dir); err != nil {
				return err
			}
		}
	}
	for r := 0; r < rounds; r++ {
		for _, s := range subjects {
			start := time.Now()
			cpu, err := applyIn(s.bin, dsn, s.dir)
			if err != nil {
				return err
			}
			s.wall = append(s.wall, time.Since(start))
			s.cpu = append(s.cpu, cpu)
			ev, err := lastEvent(ctx, db, s.flow)
			if err != nil {
				return err
			}
			if ev.action != "incremental" || ev.partitions != 0 {
				return fmt.Errorf("%s: the refresh of %s was %s, not incremental with nothing changed", s.name, s.flow, ev.what())
			}
			s.inTx = append(s.inTx, ev.duration)
		}
	}
	fmt.Printf("\nrwc apply of one flow whose sources did not change, the whole process, alternating, median of %d rounds, one run:\n\n", rounds)
	fmt.Println("| binary | wall | CPU (user + system) | refresh transaction | wall outside it |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	for _, s := range subjects {
		w, tx := median(s.wall), median(s.inTx)
		fmt.Printf("| %s | %s | %s | %s | %s |\n", s.name, ms(w), ms(median(s.cpu)), ms(tx), ms(w-tx))
	}
	fmt.Println("\ngoal (issue #17): ≤ 30 ms as a whole process")
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// committedSpec makes dir a git repository whose one commit holds
// pipelines/bench.yaml.
func committedSpec(dir, content string) error {
	if err := os.MkdirAll(filepath.Join(dir, "pipelines"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pipelines", "bench.yaml"), []byte(content), 0o644); err != nil {
		return err
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if _, err := wt.Add("pipelines/bench.yaml"); err != nil {
		return err
	}
	sig := &object.Signature{Name: "bench", Email: "bench@localhost", When: time.Now()}
	_, err = wt.Commit("bench spec", &git.CommitOptions{Author: sig, Committer: sig})
	return err
}

// applyIn runs bin's rwc apply in dir (its ./pipelines) and returns the
// CPU time the process used.
func applyIn(bin, dsn, dir string) (time.Duration, error) {
	cmd := exec.Command(bin, "--dsn", dsn, "apply")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s apply: %v\n%s", bin, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, nil
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func newRefreshCmd(g *globals) *cobra.Command {
	var rf runFlags
	var where, specs string
	var full, explain, allowDirty, allowLoss bool
	var batchSize int
	cmd := &cobra.Command{
		Use:   "refresh FLOW...",
		Short: "Refresh flows now; --where for a one-off predicate, --full to empty and recompute",
		Long: `Refresh the named flows now, each in one transaction.

--where CEL recomputes exactly the rows the predicate selects, once, instead of
the flow's window (a backfill); the flow's own predicate is unchanged.
--full deletes every row of the target and recomputes the window: every row
outside the window is lost. rwc says how many first, and refuses when the
table has properties: {reset_allowed: false}. It deletes rather than
truncates: readers keep reading the old rows until the refresh commits, and
never wait for it.
On such a table, --where is refused too when its DELETE would remove rows its
INSERT cannot give back (rows the query no longer yields: days the sources
dropped, DML, an earlier backfill's), saying how many, and nothing is
changed; --allow-loss deletes them anyway. A guard counts as the spec has it
and as it was deployed: the stricter wins, so an edit not yet deployed cannot
relax it.
--explain prints the SQL a refresh would run and changes nothing.

Like rwc apply, refresh runs only specs that are the git HEAD commit's: specs
with uncommitted changes, or outside a git repository, are refused unless
--allow-dirty (--explain runs nothing and does not check).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("where") && strings.TrimSpace(where) == "" {
				return fmt.Errorf("--where is empty: give the CEL predicate of the rows to recompute")
			}
			if full && where != "" {
				return fmt.Errorf("--full and --where exclude each other: --full recomputes the flow's own window")
			}
			if allowLoss && where == "" {
				return fmt.Errorf("--allow-loss goes with --where: a refresh of the window keeps what is outside it, and --full is refused on a reset_allowed: false flow whatever the flags")
			}
			if !explain {
				defer g.dialEarly(cmd.Context())()
			}
			p, err := loadClean(cmd, specs)
			if err != nil {
				return err
			}
			opts, err := rf.options(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var reqs []run.Request
			for _, name := range args {
				f := p.Flow(name)
				if f == nil {
					return fmt.Errorf("no flow %q in %s%s", name, specs, didYouMean(name, p))
				}
				req := run.Request{Flow: f, Mode: run.Window, AllowLoss: allowLoss}
				if full {
					req.Mode = run.Full
				}
				if where != "" {
					pr, ds := compileWhere(where, f)
					if ds.HasErrors() {
						diag.WriteText(cmd.ErrOrStderr(), ds, func(string) []string { return []string{where} })
						return fmt.Errorf("--where has errors; nothing was changed")
					}
					req.Mode, req.Where = run.Override, pr
				}
				reqs = append(reqs, req)
			}
			if explain {
				return explainRefresh(cmd, reqs, opts)
			}
			if _, err := checkCheckout(cmd, specs, allowDirty); err != nil {
				return err
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			flows := make([]*compile.Flow, len(reqs))
			for i, req := range reqs {
				flows[i] = req.Flow
			}
			printCatalogWarnings(cmd, p, db, flows)
			r := run.New(db, opts)
			failed := 0
			rep := newBatchReporter(cmd.OutOrStdout())
			for _, req := range reqs {
				if req.Mode == run.Override {
					if err := refreshBatched(cmd, r, req, batchSize, rep); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %v\n", err)
						failed++
					}
					continue
				}
				res := r.Refresh(cmd.Context(), req)
				printResult(cmd.OutOrStdout(), res)
				if res.Err != nil {
					failed++
				}
			}
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&where, "where", "", "one-off CEL predicate to recompute instead of the flow's window")
	cmd.Flags().BoolVar(&full, "full", false, "delete every row of the target and recompute its window (loses every row outside it)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print the SQL the refresh would run; change nothing")
	cmd.Flags().BoolVar(&allowDirty, "allow-dirty", false, "run specs that differ from the HEAD commit's, or that are in no git repository")
	cmd.Flags().BoolVar(&allowLoss, "allow-loss", false, "with --where on a reset_allowed: false flow: delete rows the recompute cannot give back")
	cmd.Flags().IntVar(&batchSize, "batch-size", run.DefaultBatchDays, "with --where: recompute in batches of this many days along the partition column, each its own transaction")
	cmd.Flags().StringVar(&specs, "specs", "pipelines", "directory of the pipeline specs")
	rf.add(cmd, g)
	return cmd
}

// compileWhere compiles a --where predicate against a flow; positions are
// in the flag's text, shown as "--where:1:5".
func compileWhere(text string, f *compile.Flow) (*predicate.Predicate, diag.List) {
	p, issues := f.CompilePredicate(text)
	var ds diag.List
	for _, is := range issues {
		ds.Errorf(is.Code, diag.Pos{File: "--where", Line: is.At.Line, Column: is.At.Column}, is.Hint, "%s", is.Message)
	}
	// The DELETE and the INSERT each evaluate it: with rand() they would
	// pick other rows, duplicating some and losing others.
	if p != nil && p.Determinism == predicate.NonDeterministic {
		ds.Errorf("RW213", diag.Pos{File: "--where", Line: 1, Column: 1}, "write a predicate on the columns, e.g. "+f.PartitionBy+" >= date('2026-01-01')",
			"an override must select the same rows for its DELETE and its INSERT, and rand() picks others each time")
	}
	return p, ds
}

func didYouMean(name string, p *compile.Project) string {
	var names []string
	for _, f := range p.Flows {
		names = append(names, f.Name())
	}
	if best := diag.Closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func explainRefresh(cmd *cobra.Command, reqs []run.Request, opts run.Options) error {
	out := cmd.OutOrStdout()
	for _, req := range reqs {
		pr := req.Flow.Predicate
		if req.Mode == run.Override {
			pr = req.Where
		}
		resolved, err := pr.Resolve(predicate.Resolution{Now: timeNow(), Zone: opts.Zone})
		if err != nil {
			return err
		}
		s, err := req.Flow.Statements(resolved, req.Mode == run.Full)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "-- flow %s: window %s\n", req.Flow.Name(), diag.Visible(s.PredicateCEL))
		if len(s.PushedTo) > 0 {
			fmt.Fprintf(out, "-- predicate pushed to: %v\n", s.PushedTo)
		}
		fmt.Fprintf(out, "BEGIN;\n")
		for _, st := range s.List() {
			fmt.Fprintf(out, "%s;\n", diag.VisibleLines(st)) // a control character of a spec's shows as U+FFFD
		}
		fmt.Fprintf(out, "COMMIT;\n\n")
	}
	return nil
}

// refreshBatched runs a --where override in batches along the partition
// column; each batch commits on its own, so an interrupted run keeps what
// it finished and running it again is safe.
func refreshBatched(cmd *cobra.Command, r *run.Runner, req run.Request, days int, rep *batchReporter) error {
	job := &run.BackfillJob{Path: whereJob, Flow: req.Flow, Where: req.Where, BatchDays: days, KeepWindow: true}
	batches, err := r.PlanBatches(job)
	if err != nil {
		return err
	}
	if !req.AllowLoss {
		if err := r.CheckLoss(cmd.Context(), req.Flow, batches); err != nil {
			return err
		}
	}
	for i, b := range batches {
		p, ds := compileWhere(b, req.Flow)
		if ds.HasErrors() {
			return fmt.Errorf("batch %d: %s", i+1, ds[0].Message)
		}
		res := r.Refresh(cmd.Context(), run.Request{Flow: req.Flow, Mode: run.Override, Where: p, AllowLoss: req.AllowLoss})
		if res.Err != nil {
			printResult(cmd.OutOrStdout(), res)
			return fmt.Errorf("batch %d of %d failed; the batches before it are committed", i+1, len(batches))
		}
		if len(batches) == 1 {
			printResult(cmd.OutOrStdout(), res)
			continue
		}
		rep.report(run.BatchProgress{Job: job, Batch: i + 1, Total: len(batches), Result: res})
	}
	return nil
}

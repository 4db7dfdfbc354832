package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func newRefreshCmd(g *globals) *cobra.Command {
	var rf runFlags
	var where string
	var full, explain, allowDirty, allowLoss, yes bool
	var batch string
	var batchSize int
	var selectors []string
	cmd := &cobra.Command{
		Use:   "refresh [DIR] FLOW...",
		Short: "Refresh flows now; --where for a one-off predicate, --full to empty and recompute",
		Long: `Refresh the named flows of the specs in DIR (default ./pipelines) now, each in
one transaction.

The first argument is DIR when it is written as a path (./specs, specs/, .),
or when flows follow it and it names an existing directory: rwc refresh specs
page_views. A single argument is a flow. A name that is both a directory here
and a flow of ./pipelines is refused as ambiguous: write ./NAME for the
directory. (--specs DIR, the older spelling, still works; given with a
different DIR it is refused.)

--where CEL recomputes exactly the rows the predicate selects, once, instead of
the flow's window (a backfill); the flow's own predicate is unchanged.
--full deletes every row of the target and recomputes the window: every row
outside the window is lost. On a terminal, rwc says how many first and asks
to go ahead; --yes skips the question, and without a terminal (a script, CI)
--full needs --yes. It refuses when the table has properties:
{reset_allowed: false}. It deletes rather than
truncates: readers keep reading the old rows until the refresh commits, and
never wait for it.
On such a table, --where is refused too when its DELETE would remove rows its
INSERT cannot give back (rows the query no longer yields: days the sources
dropped, DML, an earlier backfill's), saying how many, and nothing is
changed; --allow-loss deletes them anyway. So is a refresh of the window when
the flow's replace_where now reaches beyond the last refresh's window: what
it newly covers is history, and the rows there its query no longer yields are
counted the same way. A guard counts as the spec has it
and as it was deployed: the stricter wins, so an edit not yet deployed cannot
relax it.
--explain prints what the refresh would do, decided as it decides: its action
and reasons, the partitions an incremental refresh recomputes, and the exact
SQL; it reads the database (the fingerprints too) and changes nothing.

--select refreshes the flows it selects instead of named ones (rwc refresh
[DIR] --select +page_views), in dependency order, and refuses, as rwc apply
--select does, to leave out a flow upstream of a selected one that is new or
changed since the last deployment.

Like rwc apply, refresh runs only specs that are the git HEAD commit's: specs
with uncommitted changes, or outside a git repository, are refused unless
--allow-dirty (--explain runs nothing and does not check).

SIGINT or SIGTERM rolls back the refresh (or --where batch) that is running,
keeps what committed before (and says what), and exits 130 or 143.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(selectors) > 0 && len(args) > 1 {
				return fmt.Errorf("with --select, rwc refresh takes at most DIR (rwc refresh [DIR] --select SELECTOR): the flows are the ones --select selects")
			}
			if len(selectors) > 0 {
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		ValidArgsFunction: completeFlows(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("where") && strings.TrimSpace(where) == "" {
				return fmt.Errorf("--where is empty: give the CEL predicate of the rows to recompute")
			}
			days, err := spec.ParseBatch(batch)
			if cmd.Flags().Changed("batch-size") {
				days, err = batchSize, nil
				fmt.Fprintln(cmd.ErrOrStderr(), "rwc: --batch-size is --batch now: use --batch 7d, as backfill files write batch: 7d")
			}
			if err != nil {
				return fmt.Errorf("--batch: %v", err)
			}
			if full && where != "" {
				return fmt.Errorf("--full and --where exclude each other: --full recomputes the flow's own window")
			}
			if allowLoss && full {
				return fmt.Errorf("--allow-loss does not go with --full: --full is refused on a reset_allowed: false flow whatever the flags; use --where to recompute a range")
			}
			var specs string
			var names []string
			if len(selectors) > 0 {
				specs, err = oneSpecDir(cmd, specDir(args), len(args) == 1)
			} else {
				specs, names, err = dirAndFlows(cmd, "rwc refresh", args, 0)
			}
			if err != nil {
				return err
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
			var sel *compile.Selection
			if len(selectors) > 0 {
				if sel, err = compile.Select(p, selectors); err != nil {
					return err
				}
				for _, f := range sel.Flows {
					names = append(names, f.Name())
				}
			}
			var reqs []run.Request
			for _, name := range names {
				f := p.Flow(name)
				if f == nil {
					return noFlow(name, specs, "rwc refresh [DIR] FLOW...", p)
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
				// A database shows what the statements depend on; without
				// one, --explain still prints them, saying what it assumed.
				db, err := g.existingDB(cmd.Context())
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %v; explaining without a database\n", err)
				}
				if db != nil {
					defer db.Close()
				}
				return explainRefresh(cmd, reqs, opts, db)
			}
			if _, err := checkCheckout(cmd, specs, allowDirty); err != nil {
				return err
			}
			ask := full && !yes && asksFull(reqs)
			if ask && !stdinTerminal(cmd.InOrStdin()) {
				return fmt.Errorf("rwc refresh --full deletes every row of the target outside its window for good, and asks first; stdin is not a terminal, so nothing was changed: pass --yes to go ahead")
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			if sel != nil {
				undeployed, err := run.Undeployed(cmd.Context(), db, p, specs, timeNow(), opts.Zone)
				if err != nil {
					return err
				}
				if err := sel.CheckOrder(undeployed); err != nil {
					return err
				}
			}
			if ask {
				if err := confirmFull(cmd, db, reqs, opts); err != nil {
					return err
				}
			}
			flows := make([]*compile.Flow, len(reqs))
			for i, req := range reqs {
				flows[i] = req.Flow
			}
			printCatalogWarnings(cmd, p, db, flows)
			return runRefreshes(cmd, run.New(db, opts), reqs, days)
		},
	}
	cmd.Flags().StringVar(&where, "where", "", "one-off CEL predicate to recompute instead of the flow's window")
	cmd.Flags().BoolVar(&full, "full", false, "delete every row of the target and recompute its window (loses every row outside it)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --full: go ahead without asking (needed without a terminal)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print rwc's decision and the SQL the refresh would run (rwc explain FLOW shows the database's plan of it); change nothing")
	cmd.Flags().BoolVar(&allowDirty, "allow-dirty", false, "run specs that differ from the HEAD commit's, or that are in no git repository")
	cmd.Flags().BoolVar(&allowLoss, "allow-loss", false, "on a reset_allowed: false flow: let --where, or a window grown beyond the last one, delete rows the recompute cannot give back")
	cmd.Flags().StringVar(&batch, "batch", fmt.Sprintf("%dd", run.DefaultBatchDays), "with --where: recompute in batches of this many days along the partition column (7d, as backfill files write batch: 7d), each its own transaction")
	cmd.Flags().IntVar(&batchSize, "batch-size", run.DefaultBatchDays, "the number of days of --batch")
	_ = cmd.Flags().MarkHidden("batch-size") // its old name (cobra's deprecation notice goes to stdout)
	addSelectFlag(cmd, &selectors)
	addSpecsFlag(cmd)
	rf.add(cmd, g)
	return cmd
}

// runRefreshes runs reqs in turn; a failed one does not stop the others,
// an interrupt does (and says what committed).
func runRefreshes(cmd *cobra.Command, r *run.Runner, reqs []run.Request, batchSize int) error {
	failed := 0
	rep := view.NewBatchReporter(cmd.OutOrStdout(), terminalWidth(cmd.OutOrStdout()))
	tally := &run.Tally{}
	for i, req := range reqs {
		if req.Mode == run.Override {
			err := refreshBatched(cmd, r, req, batchSize, rep, tally)
			if stop := tally.Interrupted(cmd.Context(), err, flowNames(reqs[i+1:]), refreshNext); stop != nil {
				return stop
			}
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %v\n", err)
				failed++
			}
			continue
		}
		res := r.Refresh(cmd.Context(), req)
		tally.Refreshed(res)
		stop := tally.Interrupted(cmd.Context(), res.Err, flowNames(reqs[i+1:]), refreshNext)
		if res.Err == nil || stop == nil {
			view.Result(cmd.OutOrStdout(), res) // a refresh the interrupt rolled back is told of in its account
		}
		if stop != nil {
			return stop
		}
		if res.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

// stdinTerminal reports whether rwc can ask on r (stdin); tests replace it.
var stdinTerminal = func(r io.Reader) bool { return isTerminal(r) }

// asksFull reports whether a --full refresh of reqs asks first: unless
// every flow's spec says reset_allowed: false, which the refresh refuses
// whatever the answer.
func asksFull(reqs []run.Request) bool {
	for _, req := range reqs {
		if req.Flow.Table.ResetAllowed {
			return true
		}
	}
	return false
}

// confirmFull says, per flow, how many rows --full deletes for good, and
// asks on stdin to go ahead; anything but y or yes changes nothing.
func confirmFull(cmd *cobra.Command, db *sql.DB, reqs []run.Request, opts run.Options) error {
	w := cmd.ErrOrStderr()
	for _, req := range reqs {
		f := req.Flow
		if !f.Table.ResetAllowed {
			continue
		}
		n, window, err := run.OutsideWindow(cmd.Context(), db, f, opts)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(window, "(") {
			window = "(" + window + ")"
		}
		fmt.Fprintf(w, "rwc: refresh --full of %s deletes every row of %s.%s and recomputes its window %s: %s outside it are lost for good\n",
			f.Name(), f.Table.Pipeline.Schema, f.Name(), diag.Visible(window), diag.Plural(int(n), "row"))
	}
	fmt.Fprint(w, "Go ahead? [y/N] ")
	answer, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(w)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not confirmed: nothing was changed (--yes goes ahead without asking)")
}

// refreshNext is what running an interrupted rwc refresh again does.
const refreshNext = "running the same rwc refresh again is safe: each refresh replaces its rows whole (a --where in batches starts again at its first batch)"

func flowNames(reqs []run.Request) []string {
	var names []string
	for _, req := range reqs {
		names = append(names, "flow "+req.Flow.Name())
	}
	return names
}

// compileWhere compiles a --where predicate against a flow; positions are
// in the flag's text, shown as "--where:1:5".
func compileWhere(text string, f *compile.Flow) (*predicate.Predicate, diag.List) {
	return f.CompileOverride("--where", text)
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

// explainRefresh prints what each refresh would do, decided as the refresh
// decides (run.Explain), from what a database at hand shows, or from what a
// plan without one assumes, saying so.
func explainRefresh(cmd *cobra.Command, reqs []run.Request, opts run.Options, db *sql.DB) error {
	for _, req := range reqs {
		ex, err := run.Explain(cmd.Context(), db, req, opts)
		if err != nil {
			return err
		}
		view.Explained(cmd.OutOrStdout(), req.Flow.Name(), ex)
	}
	return nil
}

// refreshBatched runs a --where override in batches (run.RefreshBatched),
// printing and tallying each.
func refreshBatched(cmd *cobra.Command, r *run.Runner, req run.Request, days int, rep *view.BatchReporter, tally *run.Tally) error {
	return r.RefreshBatched(cmd.Context(), req, days, view.WhereJob, func(b run.BatchProgress) {
		switch {
		case b.Result.Err != nil:
			if cmd.Context().Err() == nil { // else the caller says what was committed
				view.Result(cmd.OutOrStdout(), b.Result)
			}
		case b.Total == 1:
			tally.Refreshed(b.Result)
			view.Result(cmd.OutOrStdout(), b.Result)
		default:
			tally.Batch(view.JobLabel(b.Job), b.Batch, b.Total)
			rep.Report(b)
		}
	})
}

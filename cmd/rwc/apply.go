package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/run"
)

type runFlags struct {
	allowDestructive bool
	timezone         string
	lockTimeout      *time.Duration // globals.lockTimeout: every session's
	statementTimeout time.Duration
}

func (rf *runFlags) add(cmd *cobra.Command, g *globals) {
	rf.lockTimeout = &g.lockTimeout
	cmd.Flags().StringVar(&rf.timezone, "timezone", envOr("RWC_TIMEZONE", "UTC"), "time zone in which current_date() is read (IANA name; env RWC_TIMEZONE)")
	cmd.Flags().DurationVar(rf.lockTimeout, "lock-timeout", run.DefaultLockTimeout, "how long any statement waits for a lock (a flow's, a table's) before rwc gives up, naming the table and the session holding it")
	cmd.Flags().DurationVar(&rf.statementTimeout, "statement-timeout", 0, "abort any statement that runs longer (0: no limit)")
	cmd.Flags().BoolVar(&rf.allowDestructive, "allow-destructive", false, "allow dropping target columns, and retyping them to a type that may not hold every value (a widening, integer → bigint, needs no flag)")
}

// addReadLockTimeout is --lock-timeout for a command that only reads: its
// statements wait that long for a lock (a table an ALTER or a DROP holds)
// before rwc gives up, naming the table and the holder.
func addReadLockTimeout(cmd *cobra.Command, g *globals) {
	cmd.Flags().DurationVar(&g.lockTimeout, "lock-timeout", run.DefaultLockTimeout, "how long any statement waits for a lock before rwc gives up, naming the table and the session holding it")
}

func (rf *runFlags) options(log io.Writer) (run.Options, error) {
	zone, err := time.LoadLocation(rf.timezone)
	if err != nil {
		return run.Options{}, fmt.Errorf("--timezone %q: %v", rf.timezone, err)
	}
	if *rf.lockTimeout < time.Millisecond { // PostgreSQL counts milliseconds, and 0 means no limit
		return run.Options{}, fmt.Errorf("--lock-timeout %s: give at least 1ms, e.g. 30s", *rf.lockTimeout)
	}
	return run.Options{Zone: zone, LockTimeout: *rf.lockTimeout, StatementTimeout: rf.statementTimeout, Log: log,
		AllowDestructive: rf.allowDestructive}, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// loadClean loads the specs and refuses to run anything when lint finds errors.
func loadClean(cmd *cobra.Command, dir string) (*compile.Project, error) {
	p, ds, err := loadProject(dir)
	if err != nil {
		return nil, err
	}
	// Warnings too: a volatile function (RW405) matters most where it runs.
	if len(ds) > 0 {
		diag.WriteText(cmd.ErrOrStderr(), ds, sourcesOf(p))
	}
	if ds.HasErrors() {
		return nil, fmt.Errorf("%s has errors (%s); nothing was changed", dir, ds.Summary())
	}
	return p, nil
}

// checkCheckout reads the git state of the specs in dir and refuses to run
// them when they are not a commit's (diff.Checkout.Refusal), unless
// allowDirty; then it warns when that state could not be read.
func checkCheckout(cmd *cobra.Command, dir string, allowDirty bool) (diff.Checkout, error) {
	co := diff.ReadCheckout(dir)
	if err := co.Refusal(dir); err != nil && !allowDirty {
		return co, err
	}
	if co.Err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "rwc: cannot read the git state of %s: %v\n", dir, co.Err)
	}
	return co, nil
}

// printCatalogWarnings prints the RW405 warnings only the database can
// give, for the files of flows (all when nil). Warnings only: the command
// goes on, also when the look-up fails.
func printCatalogWarnings(cmd *cobra.Command, p *compile.Project, db *sql.DB, flows []*compile.Flow) {
	cw, err := p.CatalogWarnings(run.VolatileLookup(cmd.Context(), db))
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "rwc: warning: the queries' functions could not be looked up in the database's catalog, so volatile ones are not flagged (%v)\n", err)
		return
	}
	if flows != nil {
		files := map[string]bool{}
		for _, f := range flows {
			files[f.Table.Pos.File] = true
		}
		cw = slices.DeleteFunc(cw, func(d diag.Diagnostic) bool { return !files[d.File] })
	}
	diag.WriteText(cmd.ErrOrStderr(), cw, sourcesOf(p))
}

func newApplyCmd(g *globals) *cobra.Command {
	var rf runFlags
	var allowDirty, dropRemoved, allowLoss bool
	var format string
	var selectors []string
	cmd := &cobra.Command{
		Use:   "apply [DIR|PLANFILE]",
		Short: "Create what is new and refresh every flow, in dependency order; record the deployment",
		Long: `Refresh every flow of the specs in DIR (default ./pipelines), creating targets
that do not exist yet, in dependency order. Each flow's refresh is one
transaction: a failure leaves that flow's target as it was, the other flows are
still refreshed (flows that read a failed flow's target are skipped), and the
exit status is 1. When every flow succeeded, the deployment is recorded with
the git HEAD commit. Specs that differ from that commit's (DIR's *.yaml and
backfills/*.yaml files, added, removed or edited, tracked or not) are refused
unless --allow-dirty; other files do not matter. Outside a git repository (or
before its first commit) there is no commit to deploy: that too needs
--allow-dirty, and the deployment is recorded without a commit.

Given a plan saved by rwc plan --out, apply runs exactly that plan (resolved at
the plan's instant) and refuses it, changing nothing, when anything it was
computed from moved: the deployment, the spec files, a flow's last refresh.

A backfill file of a flow with reset_allowed: false (in the spec or as
deployed) that would delete rows its recompute cannot give back (the query no
longer yields them: days the sources dropped, DML) is refused, saying how
many, unless the file says allow_loss: true; so is a window refresh of such a
flow whose replace_where now reaches beyond the last refresh's window and would
delete rows there that its query no longer yields. These are counted before
anything is changed, and all refusals are reported together. --allow-loss
allows them for every flow and backfill file of this apply (for a backfill
already started, whose file cannot change, it is the only way).

--select applies only the flows it selects (in dependency order) and their
backfill files, and refuses, changing nothing, a selection that leaves out a
flow upstream of a selected one (whose target it reads, directly or through
other flows) that is new or changed since the last deployment: select it too
(--select +FLOW). An upstream flow whose definition is deployed may be left
out. An apply with --select records no deployment: the last deployment stays
what rwc plan diffs against and what the guards read, so the flows it left
out are not taken as deployed; the next rwc apply without --select records
it. --drop-removed does not go with it. A saved plan made with --select
applies its own selection.

--drop-removed drops the targets of flows the specs no longer define, except
one whose deployed definition has reset_allowed: false: deploy
reset_allowed: true for it first, then remove it.

SIGINT or SIGTERM rolls back the refresh or backfill batch that is running,
keeps what committed before (and says what), and exits 130 or 143 without
recording the deployment; the next rwc apply resumes, each backfill at its
first batch not committed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json", "markdown"); err != nil {
				return err
			}
			dir := specDir(args)
			var saved *compile.Plan
			if st, err := os.Stat(dir); err == nil && !st.IsDir() {
				if saved, err = readPlan(dir); err != nil {
					return err
				}
				dir = saved.SpecDir
			}
			if saved != nil && len(saved.Select) > 0 {
				if len(selectors) > 0 {
					return fmt.Errorf("the saved plan was made with --select %s and applies that selection: drop --select", strings.Join(saved.Select, " "))
				}
				selectors = saved.Select
			}
			if dropRemoved && len(selectors) > 0 {
				return fmt.Errorf("--drop-removed does not go with --select: removed flows are dropped by an apply of every flow")
			}
			defer g.dialEarly(cmd.Context())()
			all, err := loadClean(cmd, dir)
			if err != nil {
				return err
			}
			p := all
			var sel *compile.Selection
			if len(selectors) > 0 {
				if sel, err = compile.Select(all, selectors); err != nil {
					return err
				}
				p = all.Only(sel)
			}
			opts, err := rf.options(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			co, err := checkCheckout(cmd, dir, allowDirty)
			if err != nil {
				return err
			}
			commit, dirty := co.Commit, co.Dirty
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			printCatalogWarnings(cmd, p, db, nil)
			if saved != nil {
				if err := run.CheckPlanCurrent(cmd.Context(), db, saved, p); err != nil {
					return err
				}
				// Exactly the planned refresh: the same instant, so the same windows.
				opts.Now = func() time.Time { return saved.At }
				if opts.Zone, err = time.LoadLocation(saved.Timezone); err != nil {
					return err
				}
			}
			if sel != nil {
				at := timeNow()
				if opts.Now != nil {
					at = opts.Now()
				}
				undeployed, err := run.Undeployed(cmd.Context(), db, all, dir, at, opts.Zone)
				if err != nil {
					return err
				}
				if err := sel.CheckOrder(undeployed); err != nil {
					return err
				}
			}
			dep := run.Deployment{Commit: commit, Dirty: dirty, By: whoami(), Specs: snapshot(p), Partial: sel != nil}
			opts.AllowLoss = allowLoss
			runner := run.New(db, opts)
			// Listed before the apply, whose deployment no longer has them:
			// a removed flow keeps the guard it was deployed with.
			var removed []run.Removed
			if sel == nil {
				if removed, err = runner.RemovedFlows(cmd.Context(), p); err != nil {
					return err
				}
			}
			ap := newApplyOutput(cmd, format, commit, dirty)
			_, err = runner.ApplyAll(cmd.Context(), p, dep, run.BackfillJobs(p, dir, commit), ap.refreshed, ap.batch)
			if err == nil {
				// Removed flows last: only a successful apply drops anything.
				err = ap.removed(cmd, runner, removed, dropRemoved)
			}
			var selected []string
			if sel != nil {
				selected = sel.Selectors
			}
			return ap.done(len(p.Flows), len(all.Flows), selected, err)
		},
	}
	rf.add(cmd, g)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text (as it goes), json or markdown (a summary for $GITHUB_STEP_SUMMARY), written when the apply ends")
	cmd.Flags().BoolVar(&allowDirty, "allow-dirty", false, "apply specs that differ from the HEAD commit's, or that are in no git repository")
	cmd.Flags().BoolVar(&allowLoss, "allow-loss", false, "let refreshes and backfill files of reset_allowed: false flows delete rows their recompute cannot give back")
	addSelectFlag(cmd, &selectors)
	cmd.Flags().BoolVar(&dropRemoved, "drop-removed", false, "drop the targets of flows the specs no longer define (their history is lost), unless deployed with reset_allowed: false")
	return cmd
}

func readPlan(path string) (*compile.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p compile.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s is not a saved plan: %v", path, err)
	}
	if p.FormatVersion != compile.PlanFormatVersion {
		return nil, fmt.Errorf("%s has plan format %d; this rwc applies format %d: plan again", path, p.FormatVersion, compile.PlanFormatVersion)
	}
	return &p, nil
}

func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

func snapshot(p *compile.Project) map[string]string {
	m := map[string]string{}
	for file, lines := range p.Spec.Sources {
		m[file] = strings.Join(lines, "\n")
	}
	return m
}

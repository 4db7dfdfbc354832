package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec/predicate"
)

type planFlags struct {
	format, out, base, at, timezone string
	detailed, noDatabase            bool
	selectors                       []string
}

func newPlanCmd(g *globals) *cobra.Command {
	var pf planFlags
	cmd := &cobra.Command{
		Use:   "plan [DIR]",
		Short: "Diff the specs against the deployed state (or --base REV) and print what apply would do",
		Long: `Compare the specs in DIR (default ./pipelines) with what was deployed — the
snapshot the last rwc apply recorded in the database, or the specs at a git
revision with --base REV — and print, per flow, the action, the reasons, the
definition changes and the exact SQL. rwc plan uses a database when one is
named or the local one is running, and never starts one.

In CI (CI set to anything) or with RWC_DATABASE_URL set but empty (a missing
secret, a fork's pull request), rwc plan refuses to plan without a database,
which would show every flow as new: name one, or ask for a plan without one
with --no-database (against --base REV, or from nothing). --base REV alone
does not count: with a database, the plan still reads its row estimates and
backfill ledger.

--select plans only the flows it selects, and their backfill files (see rwc
apply --select); a saved plan keeps its selection.

Exit status: 0; with --detailed-exitcode 0 when no definition changed, 2 when
something did, 1 on errors.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(pf.format, "text", "markdown", "json"); err != nil {
				return err
			}
			if pf.noDatabase && g.dsn != "" {
				return fmt.Errorf("--no-database and --dsn exclude each other: drop one")
			}
			p, err := makePlan(cmd.Context(), g, specDir(args), pf)
			var np *notPlanned
			if errors.As(err, &np) && pf.format != "text" {
				// The diagnostics where the plan would be (a PR comment),
				// and nothing saved for rwc apply.
				fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %v\n", np.err)
				if err := writePlanView(cmd.OutOrStdout(), pf.format, np.plan, false); err != nil {
					return err
				}
				return exitError{1}
			}
			if err != nil && pf.format != "text" {
				// Still a plan where the plan would be (a PR comment), saying
				// why there is none; nothing saved for rwc apply.
				msg := redactArgs(err.Error(), append([]string{g.dsn, os.Getenv("RWC_DATABASE_URL")}, args...))
				fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %s\n", msg)
				if err := writePlanView(cmd.OutOrStdout(), pf.format, failedPlan(specDir(args), pf, msg), false); err != nil {
					return err
				}
				return exitError{1}
			}
			if err != nil {
				return err
			}
			if pf.out != "" {
				if err := writePlan(pf.out, p); err != nil {
					return err
				}
			}
			if err := writePlanView(cmd.OutOrStdout(), pf.format, p, g.color(cmd.OutOrStdout())); err != nil {
				return err
			}
			if p.Diagnostics.HasErrors() {
				return exitError{1}
			}
			if pf.detailed && p.HasChanges() {
				return exitError{2}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pf.format, "format", "text", "output format: text, markdown (a PR comment) or json")
	cmd.Flags().StringVar(&pf.out, "out", "", "also save the plan (JSON) to `FILE`, for rwc apply FILE")
	cmd.Flags().StringVar(&pf.base, "base", "", "diff against the specs at git revision `REV` instead of the deployed state")
	cmd.Flags().StringVar(&pf.at, "at", "", "resolve current_date()/current_timestamp() at `TIME` (2026-12-01 or RFC 3339) instead of now")
	cmd.Flags().StringVar(&pf.timezone, "timezone", envOr("RWC_TIMEZONE", "UTC"), "time zone in which current_date() is read")
	addReadLockTimeout(cmd, g)
	cmd.Flags().BoolVar(&pf.noDatabase, "no-database", false, "plan without a database, against --base REV or from nothing, even in CI or with RWC_DATABASE_URL set")
	cmd.Flags().BoolVar(&pf.detailed, "detailed-exitcode", false, "exit 2 when the plan has definition changes, 0 when it has none")
	addSelectFlag(cmd, &pf.selectors)
	return cmd
}

// notPlanned: the specs have errors (err); plan lists their diagnostics.
type notPlanned struct {
	plan *compile.Plan
	err  error
}

func (n *notPlanned) Error() string { return n.err.Error() }

// failedPlan is the plan of a plan that failed for another reason than
// the specs' errors: no flows, and the error. Its instant and zone are the
// flags' when they parse.
func failedPlan(dir string, pf planFlags, msg string) *compile.Plan {
	zone, zerr := time.LoadLocation(pf.timezone)
	if zerr != nil {
		zone = time.UTC
	}
	at, aerr := parseAt(pf.at, zone)
	if aerr != nil {
		at = timeNow()
	}
	commit, dirty, _ := diff.Head(dir)
	p := compile.NotPlanned(dir, compile.Rev{Source: "worktree", Commit: commit, Dirty: dirty}, at, zone, diag.List{})
	p.Error = msg
	return p
}

func writePlanView(out io.Writer, format string, p *compile.Plan, color bool) error {
	switch format {
	case "json":
		return writeJSON(out, p)
	case "markdown":
		view.PlanMarkdown(out, p)
	default:
		view.PlanText(out, p, color)
	}
	return nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func parseAt(s string, zone *time.Location) (time.Time, error) {
	if s == "" {
		return timeNow(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, zone); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--at %q: give a date (2026-12-01) or an RFC 3339 instant (2026-12-01T06:00:00Z)", s)
}

// makePlan loads head and base, reads the state when a database is at
// hand, and builds the plan.
func makePlan(ctx context.Context, g *globals, dir string, pf planFlags) (*compile.Plan, error) {
	zone, err := time.LoadLocation(pf.timezone)
	if err != nil {
		return nil, fmt.Errorf("--timezone %q: %v", pf.timezone, err)
	}
	at, err := parseAt(pf.at, zone)
	if err != nil {
		return nil, err
	}
	head, ds, err := loadProject(dir)
	if err != nil {
		return nil, err
	}
	commit, dirty, err := diff.Head(dir)
	if ds.HasErrors() {
		diag.WriteText(g.stderr, ds, sourcesOf(head))
		return nil, &notPlanned{plan: compile.NotPlanned(dir, compile.Rev{Source: "worktree", Commit: commit, Dirty: dirty}, at, zone, ds),
			err: fmt.Errorf("%s has errors (%s); fix them before planning", dir, ds.Summary())}
	}
	if err != nil {
		return nil, err
	}
	in := compile.PlanInput{Head: head, HeadRev: compile.Rev{Source: "worktree", Commit: commit, Dirty: dirty},
		BaseRev: compile.Rev{Source: "none"}, At: at, Zone: zone}
	var db *sql.DB
	if !pf.noDatabase {
		if db, err = g.existingDB(ctx); err != nil {
			return nil, err
		}
	}
	var state run.PlanState
	if db != nil {
		defer db.Close()
		in.Observe = func(f *compile.Flow) (compile.Observation, error) { return run.Observe(ctx, db, f, 0) }
	}
	hasState := false
	if db != nil {
		// Plan only reads: a database without rwc's state is one where
		// nothing was deployed yet.
		if hasState, err = run.StateExists(ctx, db); err != nil {
			return nil, err
		}
	}
	if hasState {
		if state, err = run.ReadPlanState(ctx, db); err != nil {
			return nil, err
		}
		in.State = state.Flows
		in.Basis = compile.Basis{Deployment: state.DeploymentID, LastRefresh: state.LastRefresh}
		in.Rows = run.RowCounter(ctx, db, 0)
		in.FindChanges = func(f *compile.Flow, window *predicate.Predicate) (compile.Captured, error) {
			return run.FindChanges(ctx, db, f, window, 0)
		}
		in.CountLost = func(f *compile.Flow, counts []string) *int64 {
			n, err := run.CountLost(ctx, db, f, counts, 0)
			if err != nil {
				return nil
			}
			return &n
		}
		jobs := run.BackfillJobs(head, dir, "")
		files := make([]run.BackfillFile, len(jobs))
		for i, j := range jobs {
			files[i] = run.BackfillFile{Key: j.Path, Hash: j.Hash(), Flow: j.Flow.Name()}
		}
		ids, err := run.IdentifyBackfills(ctx, db, files)
		if err != nil {
			return nil, err
		}
		byFile := map[*compile.Backfill]run.BackfillIdentity{}
		for i, b := range head.Backfills {
			byFile[b] = ids[i]
		}
		in.BackfillStatus = func(b *compile.Backfill) (compile.BackfillStatus, string) {
			id := byFile[b]
			renamedFrom := ""
			if id.Status == compile.BackfillChanged && id.Entry != run.LedgerKey(dir, b.File.File) {
				renamedFrom = id.Entry
			}
			return id.Status, renamedFrom
		}
	}
	switch {
	case pf.base != "":
		fsys, rev, err := diff.AtRevision(dir, pf.base)
		if err != nil {
			return nil, err
		}
		if in.Base, _, err = compile.Load(fsys, dir); err != nil {
			return nil, err
		}
		in.BaseRev = compile.Rev{Source: "git", Commit: rev}
	case state.Specs != nil:
		if in.Base, _, err = compile.Load(diff.Snapshot(state.Specs), dir); err != nil {
			return nil, err
		}
		in.BaseRev = compile.Rev{Source: "state", Commit: state.Commit}
	}
	in.Definitions = diff.Classify(in.Base, in.Head, in.At, in.Zone)
	if len(pf.selectors) > 0 {
		if in.Select, err = compile.Select(head, pf.selectors); err != nil {
			return nil, err
		}
		if err := in.Select.CheckOrder(compile.Undeployed(in.Base, in.Head, in.Definitions)); err != nil {
			return nil, err
		}
	}
	p, err := compile.BuildPlan(in)
	if err != nil {
		return nil, err
	}
	p.SpecDir = dir
	p.Diagnostics = append(p.Diagnostics, ds...)
	if db != nil {
		// The catalog knows the user's functions, which lint cannot judge.
		cw, err := head.CatalogWarnings(run.VolatileLookup(ctx, db))
		if err != nil {
			return nil, err
		}
		p.Diagnostics = append(p.Diagnostics, cw...)
	}
	return p, nil
}

// existingDB connects when a database is named or the local one is
// running; plan never starts a server, and never writes.
func (g *globals) existingDB(ctx context.Context) (*sql.DB, error) {
	dsn, err := g.resolveDSN(ctx, false)
	if err != nil || dsn == "" {
		return nil, err
	}
	return open(ctx, dsn, g.dsnSource(dsn), g.lockTimeout)
}

func writePlan(path string, p *compile.Plan) error {
	var b strings.Builder
	if err := writeJSON(&b, p); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeJSON is every command's --format json: indented, with SQL's < and >
// left readable.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// terminalWidth is the width of the terminal w is, or 0 when it is none.
func terminalWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

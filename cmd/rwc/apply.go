package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
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
	lockTimeout      time.Duration
	statementTimeout time.Duration
}

func (rf *runFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&rf.timezone, "timezone", envOr("RWC_TIMEZONE", "UTC"), "time zone in which current_date() is read (IANA name; env RWC_TIMEZONE)")
	cmd.Flags().DurationVar(&rf.lockTimeout, "lock-timeout", 30*time.Second, "how long a refresh waits for its flow's lock and for table locks")
	cmd.Flags().DurationVar(&rf.statementTimeout, "statement-timeout", 0, "abort any statement that runs longer (0: no limit)")
	cmd.Flags().BoolVar(&rf.allowDestructive, "allow-destructive", false, "allow dropping and retyping target columns")
}

func (rf *runFlags) options(log io.Writer) (run.Options, error) {
	zone, err := time.LoadLocation(rf.timezone)
	if err != nil {
		return run.Options{}, fmt.Errorf("--timezone %q: %v", rf.timezone, err)
	}
	return run.Options{Zone: zone, LockTimeout: rf.lockTimeout, StatementTimeout: rf.statementTimeout, Log: log,
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
	if ds.HasErrors() {
		diag.WriteText(cmd.ErrOrStderr(), ds, sourcesOf(p))
		return nil, fmt.Errorf("%s has errors (%s); nothing was changed", dir, ds.Summary())
	}
	return p, nil
}

func newApplyCmd(g *globals) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "apply [DIR]",
		Short: "Create what is new and refresh every flow, in dependency order; record the deployment",
		Long: `Refresh every flow of the specs in DIR (default ./pipelines), creating targets
that do not exist yet, in dependency order. Each flow's refresh is one
transaction: a failure leaves that flow's target as it was, the other flows are
still refreshed (flows that read a failed flow's target are skipped), and the
exit status is 1. When every flow succeeded, the deployment is recorded with
the git HEAD commit.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := specDir(args)
			p, err := loadClean(cmd, dir)
			if err != nil {
				return err
			}
			opts, err := rf.options(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			commit, dirty, err := diff.Head(dir)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rwc: cannot read the git state of %s: %v\n", dir, err)
			}
			dep := run.Deployment{Commit: commit, Dirty: dirty, By: whoami(), Specs: snapshot(p)}
			out := cmd.OutOrStdout()
			_, err = run.New(db, opts).Apply(cmd.Context(), p, dep, func(r run.Result) { printResult(out, r) })
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rwc: %v\n", err)
				return exitError{1}
			}
			where := "(not a git work tree)"
			if commit != "" {
				where = "at " + commit[:12]
				if dirty {
					where += " with uncommitted changes"
				}
			}
			fmt.Fprintf(out, "applied %d flows %s\n", len(p.Flows), where)
			return nil
		},
	}
	rf.add(cmd)
	return cmd
}

func printResult(w io.Writer, r run.Result) {
	reasons := ""
	if len(r.Reasons) > 0 {
		reasons = " (" + strings.Join(r.Reasons, ", ") + ")"
	}
	if r.Err != nil {
		fmt.Fprintf(w, "%-24s %s%s FAILED: %v\n", r.Flow, r.Action, reasons, r.Err)
		return
	}
	fmt.Fprintf(w, "%-24s %s%s: %d deleted, %d inserted in %s\n", r.Flow, r.Action, reasons,
		r.RowsDeleted, r.RowsInserted, r.Duration.Round(time.Millisecond))
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

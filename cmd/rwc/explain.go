package main

import (
	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
)

func newExplainCmd(g *globals) *cobra.Command {
	var rf runFlags
	var format string
	cmd := &cobra.Command{
		Use:   "explain [DIR] FLOW...",
		Short: "The database's EXPLAIN of each flow's refresh: does the window reach every source scan?",
		Long: `Ask the database for its plan of the INSERT ... SELECT each flow's refresh
would send now (EXPLAIN (FORMAT JSON, VERBOSE), in a read-only transaction that
is rolled back: the query is planned, never run), and list every scan of a
table in it, saying whether the window reached it: whether an Index Cond,
Recheck Cond or Filter of the scan names one of the window's columns. A scan
the window does not reach reads the table's whole history at every refresh.

This is the database's plan; rwc refresh --explain prints rwc's own: the
decision and the SQL it would send. --format json writes the scans and the
database's JSON plan. The target must exist (rwc apply creates it). Needs a
database.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			specs, names, err := dirAndFlows(cmd, "rwc explain", args, 0)
			if err != nil {
				return err
			}
			p, err := loadClean(cmd, specs)
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
			var all []run.PlanExplain
			for _, name := range names {
				f := p.Flow(name)
				if f == nil {
					return noFlow(name, specs, "rwc explain [DIR] FLOW...", p)
				}
				ex, err := run.ExplainPlan(cmd.Context(), db, run.Request{Flow: f, Mode: run.Window}, opts)
				if err != nil {
					return err
				}
				if format == "text" {
					view.PlanExplained(cmd.OutOrStdout(), ex)
				}
				all = append(all, ex)
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	rf.add(cmd, g)
	_ = cmd.Flags().MarkHidden("allow-destructive") // nothing is written
	return cmd
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
)

func newStatusCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "status [DIR]",
		Short: "Show the deployed commit and each flow's window, last refresh and reasons, change capture and coverage",
		Long: `Show the deployed commit and each flow's window, last refresh and reasons,
change capture and coverage. DIR is the spec directory (default ./pipelines; the
older spelling --specs DIR still works), read for the per-column coverage only:
status works without it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := oneSpecDir(cmd, specDir(args), len(args) == 1)
			if err != nil {
				return err
			}
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			st, err := run.ReadStatus(cmd.Context(), db)
			if err != nil {
				return err
			}
			if st.Backfills, err = run.Ledger(cmd.Context(), db); err != nil {
				return err
			}
			// Coverage needs the flows' column types: read the specs when
			// they are there and clean; status works without them.
			if p, ds, err := loadProject(specs); err == nil && !ds.HasErrors() {
				for i := range st.Flows {
					if f := p.Flow(st.Flows[i].Flow); f != nil {
						if st.Flows[i].Coverage, err = run.Coverage(cmd.Context(), db, f); err != nil {
							return err
						}
						st.Flows[i].Capture.Mode = f.Table.Capture
						if f.Immediate() {
							if st.Flows[i].Capture.Maintained, err = run.MaintenanceHealth(cmd.Context(), db, f); err != nil {
								return err
							}
						}
						if f.CapturesByTriggers() {
							if st.Flows[i].Capture.Tables, err = run.CaptureHealth(cmd.Context(), db, f); err != nil {
								return err
							}
						}
					}
				}
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				return writeJSON(out, st)
			}
			return view.Status(out, st)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	addSpecsFlag(cmd)
	addReadLockTimeout(cmd, g)
	return cmd
}

func newEventsCmd(g *globals) *cobra.Command {
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:               "events [FLOW]",
		Short:             "Show the refresh log (one planning_information record per refresh)",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFlow,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			flow := ""
			if len(args) == 1 {
				flow = args[0]
			}
			evs, err := run.Events(cmd.Context(), db, flow, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if evs == nil {
					evs = []run.Event{}
				}
				return writeJSON(out, evs)
			}
			return view.Events(out, evs, terminalWidth(out))
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().IntVar(&limit, "limit", 100, "show at most this many of the latest events")
	addReadLockTimeout(cmd, g)
	return cmd
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("--format %q: choose %s", format, strings.Join(allowed, " or "))
}

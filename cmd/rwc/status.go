package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
)

func newStatusCmd(g *globals) *cobra.Command {
	var format, specs string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the deployed commit and each flow's window, last refresh and reasons, change capture and coverage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
					}
				}
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				return writeJSON(out, st)
			}
			switch {
			case st.DeployedAt == nil:
				fmt.Fprintln(out, "deployed: nothing yet (run rwc apply)")
			default:
				commit := st.Commit
				if commit == "" {
					commit = "(no git commit)"
				}
				if st.Dirty {
					commit += " + uncommitted changes"
				}
				fmt.Fprintf(out, "deployed: %s by %s at %s\n", commit, st.DeployedBy, st.DeployedAt.Format(time.RFC3339))
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FLOW\tTARGET\tLAST REFRESH\tLAST ACTION\tWINDOW")
			for _, f := range st.Flows {
				last := "never"
				if f.LastRefreshAt != nil {
					last = f.LastRefreshAt.Format(time.RFC3339)
				}
				action := f.LastAction
				if len(f.LastReasons) > 0 {
					action += " (" + strings.Join(f.LastReasons, ", ") + ")"
				}
				if f.LastError != "" {
					action = "FAILED: " + firstLine(f.LastError)
				}
				// A backfill, an override or a failure after the window's
				// refresh: say when, lest it read as the refresh's (the
				// refresh's own event has its start as its instant).
				if at := f.LastActionAt; at != nil && (f.LastRefreshAt == nil || !at.Equal(*f.LastRefreshAt)) {
					action += " at " + at.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Flow, f.Target, last, action, f.PredicateCEL)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			writeCapture(out, st.Flows)
			for _, f := range st.Flows {
				writeCoverage(out, f)
			}
			return writeLedger(cmd.Context(), out, db)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&specs, "specs", "pipelines", "directory of the pipeline specs (for per-column coverage)")
	addReadLockTimeout(cmd, g)
	return cmd
}

// writeCapture prints, per flow, what the next refresh will compare with
// to find what changed, and the target's dead rows.
func writeCapture(w io.Writer, flows []run.FlowStatus) {
	if len(flows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nchange capture (fingerprints taken at each refresh; nothing runs on writes):")
	for _, f := range flows {
		c := f.Capture
		what := "no fingerprints: its next refresh recomputes the window"
		switch {
		case !c.Fingerprinted:
		case c.Rewritten >= 0 && c.RewrittenPartitions == 0:
			what = fmt.Sprintf("%s fingerprinted; the target's window was rewritten whole (%s, known by their transaction)",
				diag.Plural(c.Sources, "source"), diag.Plural(int(c.Rewritten), "row"))
		case c.Rewritten >= 0:
			what = fmt.Sprintf("%s and %s of the target's window fingerprinted, %d of them rewritten (%s, known by their transaction)",
				diag.Plural(c.Sources, "source"), diag.Plural(c.Partitions, "partition"), c.RewrittenPartitions, diag.Plural(int(c.Rewritten), "row"))
		default:
			what = fmt.Sprintf("%s and %s of the target's window fingerprinted", diag.Plural(c.Sources, "source"), diag.Plural(c.Partitions, "partition"))
		}
		fmt.Fprintf(w, "  %s: %s; %s since the last VACUUM\n", f.Flow, what, diag.Plural(int(c.DeadRows), "dead row"))
	}
}

// writeCoverage prints, per flow, which partition ranges each column has
// been computed for, grouping columns with the same ranges.
func writeCoverage(w io.Writer, f run.FlowStatus) {
	if len(f.Coverage) == 0 {
		return
	}
	var order []string
	byRange := map[string][]string{}
	for _, c := range f.Coverage {
		if _, ok := byRange[c.Ranges]; !ok {
			order = append(order, c.Ranges)
		}
		byRange[c.Ranges] = append(byRange[c.Ranges], c.Column)
	}
	fmt.Fprintf(w, "\n%s columns filled for:\n", f.Flow)
	for _, r := range order {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(byRange[r], ", "), r)
	}
}

func newEventsCmd(g *globals) *cobra.Command {
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:   "events [FLOW]",
		Short: "Show the refresh log (one planning_information record per refresh)",
		Args:  cobra.MaximumNArgs(1),
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
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STARTED\tFLOW\tACTION\tREASONS\tDELETED\tINSERTED\tMS\tWINDOW\tBACKFILL")
			for _, e := range evs {
				action := e.Action
				if e.Error != "" {
					action += " FAILED: " + diag.Visible(e.Error)
				}
				backfill := ""
				if b := e.Backfill; b != nil {
					// One line per event: a reason may span several.
					backfill = diag.Visible(fmt.Sprintf("%s %d/%d: %s", b.File, b.Batch, b.Of, strings.Join(strings.Fields(b.Reason), " ")))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", e.StartedAt.Format(time.RFC3339), e.Flow, action,
					strings.Join(e.Reasons, ","), e.RowsDeleted, e.RowsInserted, e.DurationMS, diag.Visible(e.PredicateCEL), backfill)
			}
			return tw.Flush()
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

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func writeLedger(ctx context.Context, w io.Writer, db *sql.DB) error {
	entries, err := run.Ledger(ctx, db)
	if err != nil || len(entries) == 0 {
		return err
	}
	fmt.Fprintln(w, "\nbackfills:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FILE\tFLOW\tBATCHES\tDELETED\tINSERTED\tFINISHED\tREASON")
	for _, e := range entries {
		fin := "not yet (rwc apply resumes it)"
		if e.FinishedAt != nil {
			fin = e.FinishedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%d\t%d\t%s\t%s\n", diag.Visible(e.Path), e.Flow, e.BatchesDone, e.Batches, e.RowsDeleted, e.RowsInserted, fin, diag.Visible(e.Reason))
	}
	return tw.Flush()
}

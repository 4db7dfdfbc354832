package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
)

func newStateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Check and repair rwc's own state (schema rwc)",
		Long: `rwc keeps its state in the database's schema rwc: the deployments with a
snapshot of every deployed spec, each flow's target and last refresh, the
fingerprints incremental refreshes compare with, the backfill ledger and the
event log. Every other command checks that schema before it runs and, when a
table, a column, a key or the version number is not what rwc made, refuses in
these words and changes nothing; rwc state check says what is wrong, and rwc
state repair mends it (see docs/concepts.md, "When the state is damaged").`,
	}
	cmd.AddCommand(newStateCheckCmd(g), newStateRepairCmd(g))
	return cmd
}

// stateFlags are the flags rwc state check and repair share.
type stateFlags struct{ format string }

func (sf *stateFlags) add(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVar(&sf.format, "format", "text", "output format: text or json")
	cmd.Flags().DurationVar(&g.lockTimeout, "lock-timeout", run.DefaultLockTimeout, "how long any statement waits for a lock on rwc's state tables before rwc gives up, naming the table and the session holding it")
}

func (sf *stateFlags) check(g *globals) error {
	if err := checkFormat(sf.format, "text", "json"); err != nil {
		return err
	}
	if g.lockTimeout < time.Millisecond {
		return fmt.Errorf("--lock-timeout %s: give at least 1ms, e.g. 30s", g.lockTimeout)
	}
	return nil
}

func newStateCheckCmd(g *globals) *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report what is wrong with rwc's state: missing or altered tables, columns and keys, the version, flows' rows and targets",
		Long: `Check rwc's state without changing anything, and without the state migration
other commands run first (so it works on the state they refuse): every table,
column, key and index of schema rwc against this rwc's, the version number in
rwc.schema_version, each row of rwc.flows against its target (gone, dropped
and created again outside rwc, or rebuilt by Citus's alter_distributed_table,
which the next refresh adopts when it holds rwc's rows), and the flows the
event log or the last
deployment names that have no row (see rwc state repair for which of those rwc
re-adopts, and why).

Exit status: 0 when the state is healthy (or not made yet, or an older version
the next rwc apply upgrades), 2 when there are findings, 1 when the state could
not be checked.`,
		Args: cobra.NoArgs,
		RunE: sf.run(g, run.CheckState),
	}
	sf.add(cmd, g)
	return cmd
}

func newStateRepairCmd(g *globals) *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Recreate what is missing of rwc's bookkeeping and re-adopt the targets rwc created; never touches a target's rows",
		Long: `Mend what rwc state check finds, in one transaction (all of it or nothing),
under the lock the state's migration takes and within --lock-timeout: recreate
missing tables (empty), columns, keys and indexes as this rwc has them, put the
version number right, and recreate the rows of rwc.flows for targets rwc
created. It never reads, deletes or rewrites a target's rows, and running it
again changes nothing.

What it recreates carries no window and no fingerprints, so each flow it
touches recomputes its whole window at its next refresh
(PRIOR_REPLACE_WHERE_PREDICATE_MISSING, or FIRST_REFRESH for a flow the log
shows no refresh of), and keeps every row outside the window. A recreated
table is empty: the history of a lost rwc.events is gone, and a lost backfill
ledger means rwc apply would run every backfill file in the specs again.

A flow's target is re-adopted only on evidence that rwc created that very
table: every event rwc logs copies the flow's row of rwc.flows (target schema,
table and oid); the latest such record must name a table that exists now with
that same oid, and no other flow's row may name it. A table at a flow's target
name without that evidence (rwc never created it, or it was dropped and created
again since) is never adopted: it stays a finding, and rwc apply keeps refusing
it.

Exit status: 0 when nothing is left to mend, 2 when findings remain that need
you (listed, with what to do), 1 when the repair failed (nothing was changed).`,
		Args: cobra.NoArgs,
		RunE: sf.run(g, run.RepairState),
	}
	sf.add(cmd, g)
	return cmd
}

// run is a state command's RunE: op on a connection that does not first
// migrate the state (which refuses a damaged one), then its report.
func (sf *stateFlags) run(g *globals, op func(context.Context, *sql.DB, time.Duration) (run.StateReport, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := sf.check(g); err != nil {
			return err
		}
		db, err := g.connectOnly(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		rep, err := op(cmd.Context(), db, g.lockTimeout)
		if err != nil {
			return fmt.Errorf("%s", run.StateReadProblem(err))
		}
		return writeStateReport(cmd, sf.format, rep)
	}
}

// writeStateReport prints a state report and exits 2 when it has findings.
func writeStateReport(cmd *cobra.Command, format string, rep run.StateReport) error {
	out := cmd.OutOrStdout()
	if format == "json" {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		view.State(out, rep)
	}
	if !rep.Healthy() {
		return exitError{2}
	}
	return nil
}

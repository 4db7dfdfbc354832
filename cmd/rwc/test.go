package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/internal/view"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func newTestCmd(g *globals) *cobra.Command {
	var rf runFlags
	var format, where string
	cmd := &cobra.Command{
		Use:   "test [DIR] [FLOW...]",
		Short: "Check the flows' expectations on their targets as they are, without refreshing",
		Long: `Check the flows' expectations (expect:) on their targets as they are, in a
read-only transaction: nothing is refreshed or changed. Every flow of DIR (default
./pipelines) with expectations, or the FLOWs named; all of a target's rows, or
those --where selects (CEL, e.g. the range a backfill recomputed). Each failure
shows the expectation's file:line:col, how many rows fail, and up to 5 of them.
rows.max_change compares a refresh's rows with those it replaces and is not
checked here. The results are kept for rwc status. Exits 1 when an expectation
of severity error fails (warn: 0), as when a check cannot run.`,
		ValidArgsFunction: completeFlow,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			specs, names, err := testTargets(cmd, args)
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
			flows, err := testFlows(p, specs, names)
			if err != nil {
				return err
			}
			wheres := map[string]*predicate.Predicate{}
			for _, f := range flows {
				if where == "" {
					continue
				}
				pr, ds := compileWhere(where, f)
				if ds.HasErrors() {
					diag.WriteText(cmd.ErrOrStderr(), ds, func(string) []string { return []string{where} })
					return fmt.Errorf("--where has errors; nothing was checked")
				}
				wheres[f.Name()] = pr
			}
			db, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			tested := []run.Tested{}
			failed := false
			for _, f := range flows {
				t, err := run.TestExpectations(cmd.Context(), db, f, wheres[f.Name()], opts)
				if err != nil {
					return err
				}
				if !t.Recorded {
					fmt.Fprintf(cmd.ErrOrStderr(), "rwc: the results of %s could not be kept for rwc status (the role may not write schema rwc)\n", f.Name())
				}
				for _, x := range t.Results {
					failed = failed || x.Failed()
				}
				tested = append(tested, t)
			}
			if format == "json" {
				err = writeJSON(cmd.OutOrStdout(), tested)
			} else {
				view.Tested(cmd.OutOrStdout(), tested)
			}
			if err == nil && failed {
				return exitError{1}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&where, "where", "", "CEL predicate: check only the target rows it selects")
	addSpecsFlag(cmd)
	rf.add(cmd, g)
	return cmd
}

// testTargets reads [DIR] [FLOW...]: no argument is every flow of the
// spec directory.
func testTargets(cmd *cobra.Command, args []string) (string, []string, error) {
	if len(args) == 0 {
		dir, err := oneSpecDir(cmd, "", false)
		return dir, nil, err
	}
	if len(args) == 1 && (pathLike(args[0]) || (isDir(args[0]) && !hasFlow(specDir(nil), args[0]))) {
		dir, err := oneSpecDir(cmd, args[0], true)
		return dir, nil, err
	}
	return dirAndFlows(cmd, "rwc test", args, 0)
}

// testFlows are the named flows (none: every flow with expectations).
func testFlows(p *compile.Project, specs string, names []string) ([]*compile.Flow, error) {
	var out []*compile.Flow
	for _, name := range names {
		f := p.Flow(name)
		if f == nil {
			return nil, noFlow(name, specs, "rwc test [DIR] [FLOW...]", p)
		}
		out = append(out, f)
	}
	if names != nil {
		return out, nil
	}
	for _, f := range p.Flows {
		if f.HasExpectations() {
			out = append(out, f)
		}
	}
	return out, nil
}

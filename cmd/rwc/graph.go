package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/internal/view"
)

func newGraphCmd(g *globals) *cobra.Command {
	var format string
	var selectors []string
	cmd := &cobra.Command{
		Use:   "graph [DIR]",
		Short: "Draw the flows' dependency graph (DOT or Mermaid)",
		Long: `Print the dependency graph of the flows in DIR (default ./pipelines): each
flow, grouped by pipeline, the source tables it reads, and an edge from each
table read (a source, or another flow's target) to the flow reading it; flows
are refreshed in this order. --format dot (Graphviz: rwc graph | dot -Tsvg),
mermaid (a flowchart; GitHub draws it in a pull request comment inside a
` + "```mermaid" + ` block) or json. --select draws only the selected flows and
what they read. The output is stable: sorted, whatever the file order. Needs
no database.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "dot", "mermaid", "json"); err != nil {
				return err
			}
			dir := specDir(args)
			p, ds, err := loadProject(dir)
			if err != nil {
				return err
			}
			if ds.HasErrors() {
				diag.WriteText(cmd.ErrOrStderr(), ds, sourcesOf(p))
				return fmt.Errorf("%s has errors (%s); fix them before drawing the graph", dir, ds.Summary())
			}
			var sel *compile.Selection
			if len(selectors) > 0 {
				if sel, err = compile.Select(p, selectors); err != nil {
					return err
				}
			}
			gr := compile.BuildGraph(p, sel)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				return writeJSON(out, gr)
			case "mermaid":
				view.GraphMermaid(out, gr)
			default:
				view.GraphDOT(out, gr)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "output format: dot, mermaid or json")
	addSelectFlag(cmd, &selectors)
	return cmd
}

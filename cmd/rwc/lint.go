package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/spec"
)

func newLintCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Validate every pipeline and backfill file; never touches a database",
		Long: `Validate every pipeline (DIR/*.yaml) and backfill file (DIR/backfills/*.yaml):
the spec format, predicates, queries matched to columns by name, predicate
push-down and dependency cycles. DIR defaults to ./pipelines.

Exit status: 0 when there are no errors (warnings allowed), 1 otherwise.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "github":
			default:
				return fmt.Errorf("--format %q: choose text, json or github", format)
			}
			dir := specDir(args)
			p, ds, err := loadProject(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				if err := diag.WriteJSON(out, ds); err != nil {
					return err
				}
			case "github":
				diag.WriteGitHub(out, ds)
			default:
				diag.WriteText(out, ds, sourcesOf(p))
				fmt.Fprintf(out, "%s: %s (%s)\n", dir, ds.Summary(), counts(p))
			}
			if ds.HasErrors() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json or github (workflow annotations)")
	return cmd
}

func specDir(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return defaultSpecDir
}

// loadProject loads and analyses the specs in dir. A directory that does not
// exist is an error of the invocation, not a diagnostic.
func loadProject(dir string) (*compile.Project, diag.List, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory of pipeline specs (give the directory, e.g. rwc lint pipelines)", dir)
	}
	return compile.Load(spec.DirFS(dir, diff.Repo(".")), dir)
}

func sourcesOf(p *compile.Project) diag.Sources {
	return func(file string) []string {
		if p == nil {
			return nil
		}
		return p.Spec.Sources[file]
	}
}

func counts(p *compile.Project) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%s, %s, %s", diag.Plural(len(p.Spec.Pipelines), "pipeline"), diag.Plural(len(p.Flows), "flow"), diag.Plural(len(p.Spec.Backfills), "backfill"))
}

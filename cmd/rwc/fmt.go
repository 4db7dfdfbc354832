package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/spec"
)

func newFmtCmd(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [DIR]",
		Short: "Format the specs canonically; --check lists the files that would change",
		Long: `Rewrite every spec in DIR (default ./pipelines: *.yaml and backfills/*.yaml) in
rwc's canonical format: keys in the order of docs/spec.md (pipeline, schema,
tables; in a table replace_where, partition_by, properties, columns,
primary_key, indexes, query; in an index columns, unique, using, where; in a
backfill file backfill, where, reason, batch, allow_loss; unknown keys last),
2-space indents, one blank line between tables, comments kept. Values are
never changed: predicates, queries and the comments inside them (-- rwc:nolint)
stay as written (a folded > scalar becomes a literal | one with the same
value); a file rwc fmt cannot rewrite without changing what it says is left
alone. Formatting formatted specs changes nothing.

--check writes nothing: it lists the files that would change and exits 1 when
there are any (for CI). A file that is not valid YAML (rwc lint says why) is
reported and left alone, and rwc fmt exits 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := specDir(args)
			if !isDir(dir) {
				return fmt.Errorf("%s is not a directory of pipeline specs", dir)
			}
			fsys := spec.DirFS(dir, diff.Repo("."))
			var files []string
			for _, pattern := range []string{"*.yaml", spec.BackfillDir + "/*.yaml"} {
				m, err := fs.Glob(fsys, pattern)
				if err != nil {
					return err
				}
				files = append(files, m...)
			}
			sort.Strings(files)
			out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			failed, changed := 0, 0
			for _, f := range files {
				path := filepath.Join(dir, f)
				src, err := fs.ReadFile(fsys, f)
				if err != nil {
					fmt.Fprintf(stderr, "rwc: %s: %v\n", path, err)
					failed++
					continue
				}
				formatted, err := spec.Format(src, filepath.Dir(f) == spec.BackfillDir)
				if err != nil {
					fmt.Fprintf(stderr, "rwc: %s: %v\n", path, err)
					failed++
					continue
				}
				if string(formatted) == string(src) {
					continue
				}
				changed++
				if check {
					fmt.Fprintf(out, "%s\n", path)
					continue
				}
				if err := os.WriteFile(path, formatted, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(out, "formatted %s\n", path)
			}
			if check && changed > 0 {
				fmt.Fprintf(stderr, "rwc: %d of %d spec files are not formatted: run rwc fmt %s\n", changed, len(files), dir)
				return exitError{1}
			}
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; list the files that would change and exit 1 when there are any")
	return cmd
}

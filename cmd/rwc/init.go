package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/internal/scaffold"
)

func newInitCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Start a repository: a sample pipeline, the CI workflow, the schemas editors read, .rwc/ ignored",
		Long: `Write into DIR (default .) what a repository of rwc specs starts with:

  pipelines/example.yaml        a sample pipeline that lints clean (only when
                                pipelines/ has no *.yaml spec yet)
  .github/workflows/rwc.yml     the CI recipe of docs/ci.md: lint and plan on
                                pull requests, apply on merge and daily, with
                                this rwc's release (when it is one) pinned
  .github/workflows/rwc-comment.yml
                                posts the plan as the pull request's comment
                                (forks' too)
  .rwc-schemas/*.schema.json    the JSON Schemas of the spec formats, which
                                the specs reference relatively
                                (# yaml-language-server: $schema=...), so
                                editors complete and check them offline
  .gitignore                    .rwc/ (the local PostgreSQL) added

A file that exists with other content is never overwritten: rwc init lists
each, writes nothing and exits 1; move them aside, or leave them and write the
others by hand. Files already as rwc init writes them are left alone: run
again, it has nothing to do. rwc backfill new references the schemas the same
way when it finds them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			specs, _ := filepath.Glob(filepath.Join(root, defaultSpecDir, "*.yaml"))
			files := scaffold.Files(defaultSpecDir, len(specs) == 0)
			var write []scaffold.File
			var conflicts []string
			for _, rel := range append([]string{".gitignore"}, scaffoldPaths(files)...) {
				if err := writableInside("rwc init", root, rel); err != nil {
					return err
				}
			}
			for _, f := range files {
				path := filepath.Join(root, f.Path)
				old, err := os.ReadFile(path)
				switch {
				case os.IsNotExist(err):
					write = append(write, f)
				case err != nil:
					return err
				case !bytes.Equal(old, f.Content):
					conflicts = append(conflicts, path)
				}
			}
			gitignore := filepath.Join(root, ".gitignore")
			oldIgnore, err := os.ReadFile(gitignore)
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			newIgnore, ignoreChanged := scaffold.Gitignore(oldIgnore)
			if len(conflicts) > 0 {
				return fmt.Errorf("rwc init writes nothing: %s already exist with other content, and rwc init never overwrites a file (move them aside and run it again, or keep them)",
					strings.Join(conflicts, ", "))
			}
			out := cmd.OutOrStdout()
			for _, f := range write {
				path := filepath.Join(root, f.Path)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(path, f.Content, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s\n", path)
			}
			if ignoreChanged {
				if err := os.WriteFile(gitignore, newIgnore, 0o644); err != nil {
					return err
				}
				verb := "added .rwc/ to"
				if oldIgnore == nil {
					verb = "wrote"
				}
				fmt.Fprintf(out, "%s %s\n", verb, gitignore)
			}
			if len(write) == 0 && !ignoreChanged {
				fmt.Fprintln(out, "nothing to do: every file is as rwc init writes it")
				return nil
			}
			if len(specs) > 0 {
				fmt.Fprintf(out, "kept the specs in %s (no sample pipeline written)\n", filepath.Join(root, defaultSpecDir))
			}
			fmt.Fprintln(out, "next: rwc lint, rwc plan; add the RWC_DATABASE_URL secret for CI (docs/ci.md)")
			return nil
		},
	}
}

func scaffoldPaths(files []scaffold.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

package main

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/spec"
)

// Shell completion (cobra's rwc completion bash|zsh|fish|powershell)
// completes the flows of the specs where a command takes FLOW: the spec
// directory given first (as DIR or --specs DIR), else ./pipelines, under
// -C DIR when given. A word written as a path completes as a directory.

// completeFlows is the ValidArgsFunction of commands taking [DIR] FLOW...;
// maxArgs is the most arguments the command takes (0: any number).
func completeFlows(maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if maxArgs > 0 && len(args) >= maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if pathLike(toComplete) || strings.HasPrefix(toComplete, ".") {
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
		dir := defaultSpecDir
		if s, ok := specsFlag(cmd); ok {
			dir = s
		}
		rest := args
		if len(args) > 0 && (pathLike(args[0]) || isDir(completionPath(cmd, args[0])) && !slices.Contains(flowsIn(cmd, dir), args[0])) {
			dir, rest = args[0], args[1:]
		}
		var out []cobra.Completion
		for _, name := range flowsIn(cmd, dir) {
			if strings.HasPrefix(name, toComplete) && !slices.Contains(rest, name) {
				out = append(out, name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeFlow completes the single, optional FLOW of rwc events.
func completeFlow(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, name := range flowsIn(cmd, defaultSpecDir) {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionPath is path as the command would read it: under -C DIR (a
// completion runs no PersistentPreRun, so rwc has not changed directory).
func completionPath(cmd *cobra.Command, path string) string {
	if c := cmd.Flag("chdir"); c != nil && c.Value.String() != "" && !filepath.IsAbs(path) {
		return filepath.Join(c.Value.String(), path)
	}
	return path
}

// flowsIn lists the flows of the specs in dir, read as lint reads them but
// without analysing the queries; nil when there are none.
func flowsIn(cmd *cobra.Command, dir string) []string {
	dir = completionPath(cmd, dir)
	if !isDir(dir) {
		return nil
	}
	root := completionPath(cmd, ".")
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		rel = dir
	}
	sp, _ := spec.Load(spec.DirFS(dir, diff.Repo(root)), rel)
	if sp == nil {
		return nil
	}
	var names []string
	for _, pl := range sp.Pipelines {
		for _, t := range pl.Tables {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names
}

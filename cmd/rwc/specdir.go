package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/spec"
)

// The spec directory is an argument, DIR, of every command that reads the
// specs: rwc lint|plan|apply|status [DIR], rwc refresh [DIR] FLOW... and
// rwc backfill new [DIR] FLOW. --specs DIR, its older spelling, still works
// where it used to (refresh, backfill new, status), hidden from the help.

// defaultSpecDir is the spec directory when none is given.
const defaultSpecDir = "pipelines"

// addSpecsFlag adds --specs, the older spelling of DIR, hidden; read it
// with specsFlag, not through the variable.
func addSpecsFlag(cmd *cobra.Command) {
	cmd.Flags().String("specs", "", "the spec directory, as DIR gives it (DIR's older spelling)")
	_ = cmd.Flags().MarkHidden("specs")
}

// specsFlag is the value of --specs, when it was given.
func specsFlag(cmd *cobra.Command) (string, bool) {
	f := cmd.Flags().Lookup("specs")
	if f == nil || !f.Changed {
		return "", false
	}
	return f.Value.String(), true
}

// oneSpecDir is the spec directory: dir when given (positional), else
// --specs, else ./pipelines. Both given must name the same directory.
func oneSpecDir(cmd *cobra.Command, dir string, given bool) (string, error) {
	s, ok := specsFlag(cmd)
	switch {
	case given && ok && !sameDir(dir, s):
		return "", fmt.Errorf("the spec directory is given twice, as %s and --specs %s: give it once, as the first argument (--specs is its older spelling)", dir, s)
	case given:
		return dir, nil
	case ok:
		return s, nil
	}
	return defaultSpecDir, nil
}

// sameDir reports whether a and b name the same directory, however written
// (pipelines, ./pipelines/, its absolute path).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// pathLike reports whether an argument is written as a path: it has a
// separator, or is . or ... A flow's name never is (it is an SQL
// identifier: lower-case letters, digits and underscores).
func pathLike(arg string) bool {
	return arg == "." || arg == ".." || strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator)
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// hasFlow reports whether the specs in dir define a flow of that name (read
// as lint reads them, but without analysing the queries).
func hasFlow(dir, name string) bool {
	if !isDir(dir) {
		return false
	}
	sp, _ := spec.Load(spec.DirFS(dir, diff.Repo(".")), dir)
	return sp != nil && sp.Flow(name) != nil
}

// dirAndFlows splits the arguments [DIR] FLOW... of the command use (e.g.
// "rwc refresh"), which takes at most maxFlows flows (0: any number), into
// the spec directory and the flows. The first argument is DIR when
//
//   - there are more arguments than flows allowed (rwc backfill new DIR FLOW);
//   - it is written as a path (./reports, specs/, .): a flow's name never is;
//   - more arguments follow it and it names an existing directory, unless it
//     is also a flow of the specs the flows would otherwise be read from:
//     of --specs DIR, then it is that flow; of ./pipelines, then rwc cannot
//     tell and refuses, saying how to write either.
//
// Otherwise every argument is a flow, of --specs DIR or ./pipelines (when
// there is none, that is said, with where DIR goes). A single argument is a
// flow; one that can only be a directory is refused, saying to name the
// flows after it. DIR and a different --specs are refused.
func dirAndFlows(cmd *cobra.Command, use string, args []string, maxFlows int) (string, []string, error) {
	first := args[0]
	fallback, err := oneSpecDir(cmd, "", false)
	if err != nil {
		return "", nil, err
	}
	flowsAfter := fmt.Sprintf("%s %s FLOW", use, first)
	if maxFlows != 1 {
		flowsAfter += "..."
	}
	asDir := false
	switch {
	case maxFlows > 0 && len(args) > maxFlows:
		if !isDir(first) {
			return "", nil, fmt.Errorf("%s is not a directory of pipeline specs: %s takes the spec directory, then %s (%s [DIR] FLOW)", first, use, flowCount(maxFlows), use)
		}
		asDir = true
	case pathLike(first):
		if len(args) == 1 {
			return "", nil, fmt.Errorf("%s is a spec directory, not a flow (a flow's name has no /): name the flows after it: %s", first, flowsAfter)
		}
		asDir = true
	case isDir(first) && hasFlow(fallback, first):
		if _, ok := specsFlag(cmd); !ok && len(args) > 1 {
			return "", nil, fmt.Errorf("%s is both a directory here and a flow of %s, so rwc cannot tell which you mean: write ./%s for the spec directory (%s ./%s %s), or give the spec directory before the flows (%s %s %s)",
				first, fallback, first, use, first, strings.Join(args[1:], " "), use, fallback, strings.Join(args, " "))
		}
		// a flow of --specs DIR, or the only argument: a flow
	case isDir(first):
		if len(args) == 1 {
			return "", nil, fmt.Errorf("%s is a directory, not a flow of %s: to run flows of the specs in %s, name them after it: %s", first, fallback, first, flowsAfter)
		}
		asDir = true
	}
	if !asDir {
		if _, ok := specsFlag(cmd); !ok && !isDir(fallback) {
			return "", nil, fmt.Errorf("%s is not a directory of pipeline specs: give the spec directory before the flows (%s DIR %s)", fallback, use, strings.Join(args, " "))
		}
		return fallback, args, nil
	}
	dir, err := oneSpecDir(cmd, first, true)
	return dir, args[1:], err
}

func flowCount(n int) string {
	if n == 1 {
		return "one flow"
	}
	return fmt.Sprintf("at most %d flows", n)
}

// noFlow is the error for a flow name the specs in dir do not define;
// usage is the command's, e.g. "rwc refresh [DIR] FLOW...".
func noFlow(name, dir, usage string, p *compile.Project) error {
	if pathLike(name) || isDir(name) {
		return fmt.Errorf("no flow %q in %s: the spec directory comes first, before the flows (%s)", name, dir, usage)
	}
	return fmt.Errorf("no flow %q in %s%s", name, dir, didYouMean(name, p))
}

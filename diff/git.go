// Package diff reads specs at git revisions and classifies what changed.
package diff

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
)

// Head returns the commit checked out in the git work tree containing dir,
// and whether dir (the spec directory) has uncommitted changes: changes
// elsewhere in the repository do not make a deployment's specs differ from
// the commit. Outside a git work tree it returns "" and no error.
func Head(dir string) (commit string, dirty bool, err error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	ref, err := repo.Head()
	if err != nil {
		return "", false, nil // a repository without commits yet
	}
	wt, err := repo.Worktree()
	if err != nil {
		return ref.Hash().String(), false, nil
	}
	st, err := wt.Status()
	if err != nil {
		return ref.Hash().String(), false, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ref.Hash().String(), false, err
	}
	rel, err := filepath.Rel(wt.Filesystem.Root(), abs)
	if err != nil {
		return ref.Hash().String(), false, err
	}
	prefix := filepath.ToSlash(rel) + "/"
	for file, fs := range st {
		if (rel == "." || strings.HasPrefix(file, prefix)) && (fs.Worktree != git.Unmodified || fs.Staging != git.Unmodified) {
			return ref.Hash().String(), true, nil
		}
	}
	return ref.Hash().String(), false, nil
}

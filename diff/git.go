// Package diff reads specs at git revisions and classifies what changed.
package diff

import (
	"errors"

	"github.com/go-git/go-git/v5"
)

// Head returns the commit checked out in the git work tree containing dir,
// and whether the tree has uncommitted changes. Outside a git work tree it
// returns "" and no error.
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
	return ref.Hash().String(), !st.IsClean(), nil
}

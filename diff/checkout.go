package diff

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
)

// Checkout is the git state of a spec directory, as a command that runs
// the specs sees it.
type Checkout struct {
	InRepo bool   // dir is in a git work tree
	Commit string // HEAD's commit; "" outside a work tree or before the first commit
	Dirty  bool   // the spec files differ from the commit's (see Head)
	// Err is why the comparison with the commit failed (Dirty is then
	// true); the state is still usable.
	Err error
}

// ReadCheckout reads the git state of the specs in dir: Head's answer, and
// whether there is a repository at all.
func ReadCheckout(dir string) Checkout {
	if _, _, err := open(dir); errors.Is(err, git.ErrRepositoryNotExists) {
		return Checkout{}
	}
	commit, dirty, err := Head(dir)
	return Checkout{InRepo: true, Commit: commit, Dirty: dirty, Err: err}
}

// Refusal is why a command that runs the specs in dir (rwc apply, rwc
// refresh) must not run them as they are: what it runs should be a
// commit, so that the deployment names what ran. It is nil when the specs
// are HEAD's; otherwise it says what is wrong and that --allow-dirty runs
// what is on disk anyway.
func (c Checkout) Refusal(dir string) error {
	switch {
	case c.Err != nil && c.Commit == "":
		return fmt.Errorf("cannot read the git state of %s (%v), so there is no commit to deploy; nothing was changed: fix the repository, or pass --allow-dirty to run what is on disk", dir, c.Err)
	case c.Err != nil:
		return fmt.Errorf("the specs in %s cannot be compared with commit %.12s (%v), so they count as uncommitted changes; nothing was changed: fix that, or pass --allow-dirty", dir, c.Commit, c.Err)
	case !c.InRepo:
		return fmt.Errorf("%s is not in a git repository, so there is no commit to deploy; nothing was changed: commit the specs to git (git init, git add, git commit), or pass --allow-dirty to run what is on disk", dir)
	case c.Commit == "":
		return fmt.Errorf("%s is in a git repository without commits, so there is no commit to deploy; nothing was changed: commit the specs, or pass --allow-dirty to run what is on disk", dir)
	case c.Dirty:
		return fmt.Errorf("%s has uncommitted changes to its specs: a deployment should be a commit; nothing was changed: commit them, or pass --allow-dirty", dir)
	}
	return nil
}

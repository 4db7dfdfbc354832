package diff

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// A spec directory in a linked work tree (git worktree add) or in a
// submodule's checkout is read like one in a plain clone: their .git is a
// file naming the repository's real directory.
func TestHeadInWorktreeAndSubmodule(t *testing.T) {
	root, head := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gitCmd(t, root, "worktree", "add", "--detach", linked, head)
	super, _ := initRepo(t)
	gitCmd(t, super, "-c", "protocol.file.allow=always", "submodule", "add", root, "sub")
	for _, dir := range []string{filepath.Join(linked, "pipelines"), filepath.Join(super, "sub", "pipelines")} {
		commit, dirty, err := Head(dir)
		if err != nil || commit != head || dirty {
			t.Errorf("Head(%s) = %s, dirty %v, %v; want %s, clean", dir, commit, dirty, err, head)
		}
		if _, commit, err := AtRevision(dir, "HEAD"); err != nil || commit != head {
			t.Errorf("AtRevision(%s, HEAD) = %s, %v; want %s", dir, commit, err, head)
		}
	}
}

func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

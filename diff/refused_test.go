package diff

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rwc-dev/rwc/spec"
)

// A spec directory at a revision reads as a checkout would: a link is
// followed within the commit, and a link out of it, or a file past the
// cap, is refused by name, unread.
func TestAtRevisionRefuses(t *testing.T) {
	root, repo := initRepo(t)
	write("shared/p.yaml", "pipeline: shared\n")(t, root)
	write("pipelines/big.yaml", strings.Repeat("#", spec.MaxFileSize+1))(t, root)
	for target, name := range map[string]string{"../shared/p.yaml": "pipelines/in.yaml", "/etc/passwd": "pipelines/abs.yaml", "../../x.yaml": "pipelines/out.yaml"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	head := commitAll(t, repo)
	fsys, commit, err := AtRevision(filepath.Join(root, "pipelines"), head)
	if err != nil || commit != head {
		t.Fatal(commit, err)
	}
	if b, err := fs.ReadFile(fsys, "in.yaml"); err != nil || string(b) != "pipeline: shared\n" {
		t.Errorf("a link within the commit: %q, %v", b, err)
	}
	for _, name := range []string{"abs.yaml", "out.yaml", "big.yaml"} {
		var refused *spec.Refused
		if _, err := fs.ReadFile(fsys, name); !errors.As(err, &refused) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

// Head does not read what Load refuses: a named pipe among the specs makes
// them differ from the commit, at once, rather than block the comparison.
func TestHeadNamedPipe(t *testing.T) {
	root, _ := newRepo(t)
	os.Remove(filepath.Join(root, "pipelines/p.yaml"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipelines/p.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, dirty, err := Head(filepath.Join(root, "pipelines")); !dirty {
		t.Errorf("Head with named pipes: dirty %v, %v", dirty, err)
	}
}

// All the spec files at a revision together are capped as a checkout's
// are: blobs compress, so a small commit can hold gigabytes.
func TestAtRevisionTotalCapped(t *testing.T) {
	root, repo := initRepo(t)
	big := strings.Repeat("#", spec.MaxFileSize-1)
	n := spec.MaxTotalSize/(spec.MaxFileSize-1) + 1
	for i := 0; i < n; i++ {
		write(filepath.Join("pipelines", string(rune('a'+i))+".yaml"), big)(t, root)
	}
	fsys, _, err := AtRevision(filepath.Join(root, "pipelines"), commitAll(t, repo))
	if err != nil {
		t.Fatal(err)
	}
	var refused *spec.Refused
	if _, err := fs.ReadFile(fsys, string(rune('a'+n-1))+".yaml"); !errors.As(err, &refused) {
		t.Errorf("the last file past the total: %v, want a refusal", err)
	}
}

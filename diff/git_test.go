package diff

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// committed is the repository every case of TestHead starts from: specs in
// pipelines/ (a pipeline, a backfill, a README) and a file elsewhere.
var committed = map[string]string{
	"pipelines/p.yaml":           "pipeline: p\n",
	"pipelines/backfills/b.yaml": "flow: t\n",
	"pipelines/README.md":        "specs\n",
	"src/main.go":                "package main\n",
	".gitignore":                 "pipelines/local.yaml\n",
}

func TestHead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		dirty  bool
	}{
		{name: "clean", change: func(*testing.T, string) {}},
		{name: "pipeline edited", change: write("pipelines/p.yaml", "pipeline: q\n"), dirty: true},
		{name: "pipeline added, untracked", change: write("pipelines/new.yaml", "pipeline: n\n"), dirty: true},
		// rwc applies it, the commit lacks it: ignored or not.
		{name: "pipeline added, ignored by git", change: write("pipelines/local.yaml", "pipeline: l\n"), dirty: true},
		{name: "pipeline removed", change: remove("pipelines/p.yaml"), dirty: true},
		{name: "backfill added", change: write("pipelines/backfills/c.yaml", "flow: t\n"), dirty: true},
		{name: "backfill edited", change: write("pipelines/backfills/b.yaml", "flow: u\n"), dirty: true},
		{name: "backfills removed", change: remove("pipelines/backfills"), dirty: true},
		{name: "edited and edited back", change: func(t *testing.T, root string) {
			write("pipelines/p.yaml", "pipeline: q\n")(t, root)
			write("pipelines/p.yaml", "pipeline: p\n")(t, root)
		}},
		{name: "README in the spec directory edited", change: write("pipelines/README.md", "more\n")},
		{name: "a .yml file, which rwc does not read", change: write("pipelines/old.yml", "pipeline: o\n")},
		{name: "a file elsewhere edited", change: write("src/main.go", "package other\n")},
		{name: "a spec elsewhere added", change: write("other/x.yaml", "pipeline: x\n")},
		{name: "a spec in a subdirectory rwc does not read", change: write("pipelines/drafts/d.yaml", "pipeline: d\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, head := newRepo(t)
			tc.change(t, root)
			commit, dirty, err := Head(filepath.Join(root, "pipelines"))
			if err != nil || commit != head || dirty != tc.dirty {
				t.Errorf("Head = %s, %v, %v; want %s, %v", commit, dirty, err, head, tc.dirty)
			}
		})
	}
}

// A spec directory the commit does not have yet is dirty when it holds specs.
func TestHeadNewSpecDirectory(t *testing.T) {
	root, head := newRepo(t)
	write("more/p.yaml", "pipeline: m\n")(t, root)
	if commit, dirty, err := Head(filepath.Join(root, "more")); err != nil || commit != head || !dirty {
		t.Errorf("Head = %s, %v, %v; want %s, dirty", commit, dirty, err, head)
	}
}

func TestHeadOutsideGit(t *testing.T) {
	dir := t.TempDir()
	if commit, dirty, err := Head(dir); commit != "" || dirty || err != nil {
		t.Errorf("Head outside a work tree = %q, %v, %v; want nothing", commit, dirty, err)
	}
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	if commit, dirty, err := Head(dir); commit != "" || dirty || err != nil {
		t.Errorf("Head without commits = %q, %v, %v; want nothing", commit, dirty, err)
	}
}

// newRepo commits the files of committed in a new repository and returns
// its root and the commit.
func newRepo(t *testing.T) (string, string) {
	t.Helper()
	root, repo := initRepo(t)
	for name, content := range committed {
		write(name, content)(t, root)
	}
	return root, commitAll(t, repo)
}

func write(name, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
}

// Symbolic links: git stores the link, spec.Load reads what it leads to;
// both must be the commit's.
func TestHeadSymlinks(t *testing.T) {
	link := func(target, name string) func(*testing.T, string) {
		return func(t *testing.T, root string) {
			t.Helper()
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	outside := t.TempDir()
	write("b.yaml", "flow: x\n")(t, outside)
	for _, tc := range []struct {
		name            string
		setup, change   func(*testing.T, string)
		dirty, setupErr bool
	}{
		{name: "a spec linked to a shared file, unchanged",
			setup: link("../shared/orders.yaml", "pipelines/orders.yaml"), change: func(*testing.T, string) {}},
		{name: "a spec linked to a shared file, the file edited",
			setup: link("../shared/orders.yaml", "pipelines/orders.yaml"), change: write("shared/orders.yaml", "pipeline: edited\n"), dirty: true},
		{name: "a spec link repointed",
			setup: link("../shared/orders.yaml", "pipelines/orders.yaml"), change: func(t *testing.T, root string) {
				remove("pipelines/orders.yaml")(t, root)
				link("../shared/other.yaml", "pipelines/orders.yaml")(t, root)
			}, dirty: true},
		{name: "backfills linked to a shared directory, unchanged",
			setup: link("../shared/backfills", "pipelines/backfills"), change: func(*testing.T, string) {}},
		{name: "backfills linked to a shared directory, one added there",
			setup: link("../shared/backfills", "pipelines/backfills"), change: write("shared/backfills/new.yaml", "flow: n\n"), dirty: true},
		{name: "a spec linked outside the repository",
			setup: func(*testing.T, string) {}, change: link(filepath.Join(outside, "b.yaml"), "pipelines/out.yaml"), dirty: true},
		{name: "backfills a file, not a directory: no backfills",
			setup: func(t *testing.T, root string) {
				remove("pipelines/backfills")(t, root)
				write("pipelines/backfills", "x\n")(t, root)
			},
			change: func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, repo := initRepo(t)
			write("pipelines/p.yaml", "pipeline: p\n")(t, root)
			write("shared/orders.yaml", "pipeline: orders\n")(t, root)
			write("shared/other.yaml", "pipeline: other\n")(t, root)
			write("shared/backfills/b.yaml", "flow: t\n")(t, root)
			tc.setup(t, root)
			head := commitAll(t, repo)
			tc.change(t, root)
			commit, dirty, err := Head(filepath.Join(root, "pipelines"))
			if err != nil || commit != head || dirty != tc.dirty {
				t.Errorf("Head = %s, %v, %v; want %s, %v", commit, dirty, err, head, tc.dirty)
			}
		})
	}
}

// The spec directory may be the work tree's root, and may be reached by a
// path through a symbolic link.
func TestHeadPaths(t *testing.T) {
	root, repo := initRepo(t)
	write("p.yaml", "pipeline: p\n")(t, root)
	head := commitAll(t, repo)
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(root, via); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, via} {
		if commit, dirty, err := Head(dir); err != nil || commit != head || dirty {
			t.Errorf("Head(%s) = %s, %v, %v; want %s, clean", dir, commit, dirty, err, head)
		}
	}
	write("p.yaml", "pipeline: q\n")(t, root)
	for _, dir := range []string{root, via} {
		if commit, dirty, err := Head(dir); err != nil || commit != head || !dirty {
			t.Errorf("Head(%s) = %s, %v, %v; want %s, dirty", dir, commit, dirty, err, head)
		}
	}
}

// When the comparison fails, Head says dirty: a spec linked to nothing.
func TestHeadError(t *testing.T) {
	root, repo := initRepo(t)
	write("pipelines/p.yaml", "pipeline: p\n")(t, root)
	if err := os.Symlink("missing.yaml", filepath.Join(root, "pipelines", "x.yaml")); err != nil {
		t.Fatal(err)
	}
	head := commitAll(t, repo)
	if commit, dirty, err := Head(filepath.Join(root, "pipelines")); err == nil || !dirty || commit != head {
		t.Errorf("Head = %s, dirty %v, %v; want %s, dirty and an error", commit, dirty, err, head)
	}
}

func commitAll(t *testing.T, repo *git.Repository) string {
	t.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}
	h, err := wt.Commit("specs", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// A deployed snapshot is the spec directory however apply and plan name it.
func TestSnapshot(t *testing.T) {
	for _, prefix := range []string{"pipelines/", "/abs/path/pipelines/", "", "a/backfills/", "/"} {
		fsys := Snapshot(map[string]string{prefix + "p.yaml": "pipeline: p", prefix + "backfills/b.yaml": "backfill: t"})
		for name, want := range map[string]string{"p.yaml": "pipeline: p", "backfills/b.yaml": "backfill: t"} {
			if got, err := fs.ReadFile(fsys, name); err != nil || string(got) != want {
				t.Errorf("snapshot under %q: %s = %q, %v; want %q", prefix, name, got, err, want)
			}
		}
	}
}

// initRepo is a new, empty repository.
func initRepo(t *testing.T) (string, *git.Repository) {
	t.Helper()
	root := t.TempDir()
	repo, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	return root, repo
}

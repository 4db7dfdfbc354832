package diff

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

// A spec link is followed to a file git tracks only: the work tree also
// holds what CI wrote there (a checkout's token in .git/config,
// credentials files), which no spec may quote.
func TestSpecLinksFollowTrackedFilesOnly(t *testing.T) {
	const secret = "SECRET-4711"
	root, repo := initRepo(t)
	write("shared.yaml", "pipeline: shared\ntables: {}\n")(t, root)
	write("pipelines/own.yaml", "pipeline: own\ntables: {}\n")(t, root)
	commitAll(t, repo)
	write("creds.yaml", "token: "+secret+"\n")(t, root)
	write("placeholder.yaml", "pipeline: placeholder\ntables: {}\n")(t, root)
	wt, _ := repo.Worktree()
	if _, err := wt.Add("placeholder.yaml"); err != nil {
		t.Fatal(err)
	}
	for target, name := range map[string]string{
		"../shared.yaml":      "pipelines/a.yaml",    // tracked: read
		"../creds.yaml":       "pipelines/b.yaml",    // untracked: refused
		"../.git/config":      "pipelines/c.yaml",    // inside .git: refused
		"../":                 "pipelines/backfills", // a linked directory: its files must be tracked
		"../placeholder.yaml": "pipelines/p.yaml",    // tracked, but CI wrote over it
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("placeholder.yaml", "token: "+secret+"\n")(t, root)
	dir := filepath.Join(root, "pipelines")
	p, ds := spec.Load(spec.DirFS(dir, Repo(root)), "pipelines")
	var out bytes.Buffer
	diag.WriteText(&out, ds, func(f string) []string { return p.Sources[f] })
	if strings.Contains(out.String(), secret) || strings.Contains(out.String(), "repositoryformatversion") {
		t.Fatalf("quoted an untracked file:\n%s", out.String())
	}
	refused := map[string]bool{}
	for _, d := range ds {
		if d.Code == "RW120" {
			refused[d.File] = true
		}
	}
	for name, want := range map[string]bool{"pipelines/backfills/placeholder.yaml": true, "pipelines/a.yaml": false, "pipelines/b.yaml": true, "pipelines/c.yaml": true, "pipelines/p.yaml": true,
		"pipelines/backfills/shared.yaml": false, "pipelines/backfills/creds.yaml": true} {
		if refused[name] != want {
			t.Errorf("%s refused: %v, want %v\n%s", name, refused[name], want, out.String())
		}
	}
}

// A link above the spec directory, inside the checkout, cannot lead the
// spec directory itself out of the repository rwc runs in.
func TestSpecDirectoryBehindALinkOutside(t *testing.T) {
	root, repo := initRepo(t)
	outside := t.TempDir()
	write("pipelines/s.yaml", "pipeline: SECRET-4712\n")(t, outside)
	if err := os.Symlink(outside, filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	commitAll(t, repo)
	p, ds := spec.Load(spec.DirFS(filepath.Join(root, "data", "pipelines"), Repo(root)), "data/pipelines")
	var out bytes.Buffer
	diag.WriteText(&out, ds, func(f string) []string { return p.Sources[f] })
	if strings.Contains(out.String(), "SECRET-4712") || len(ds) != 1 || ds[0].Code != "RW120" {
		t.Fatalf("want one RW120 and no quote:\n%s", out.String())
	}
}

// A spec directory named outside the repository rwc runs in is the command
// line's choice (rwc apply /elsewhere/pipelines): it is read, bounded by
// its own repository, or by itself.
func TestSpecDirectoryNamedElsewhere(t *testing.T) {
	root, _ := initRepo(t)
	elsewhere := t.TempDir()
	write("pipelines/p.yaml", "pipeline: p\ntables: {}\n")(t, elsewhere)
	_, ds := spec.Load(spec.DirFS(filepath.Join(elsewhere, "pipelines"), Repo(root)), "pipelines")
	for _, d := range ds {
		if d.Code == "RW120" {
			t.Errorf("refused: %v", d)
		}
	}
}

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
	for target, name := range map[string]string{
		"../shared.yaml": "pipelines/a.yaml",    // tracked: read
		"../creds.yaml":  "pipelines/b.yaml",    // untracked: refused
		"../.git/config": "pipelines/c.yaml",    // inside .git: refused
		"../":            "pipelines/backfills", // a linked directory: its files must be tracked
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "pipelines")
	p, ds := spec.Load(spec.DirFS(dir, Tracked(dir)), "pipelines")
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
	for name, want := range map[string]bool{"pipelines/a.yaml": false, "pipelines/b.yaml": true, "pipelines/c.yaml": true,
		"pipelines/backfills/shared.yaml": false, "pipelines/backfills/creds.yaml": true} {
		if refused[name] != want {
			t.Errorf("%s refused: %v, want %v\n%s", name, refused[name], want, out.String())
		}
	}
}

package spec

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rwc-dev/rwc/diag"
)

const secret = "SECRET-TOKEN-4711"

const goodSpec = "pipeline: p\ntables:\n  t:\n    replace_where: d >= current_date()\n    columns:\n      d: date\n    query: SELECT d FROM s\n"

// A spec path that leaves the repository, or is not a regular file, or is
// too large, is refused by name before a byte of it is read, and nothing of
// it is quoted; links inside the repository are read as before.
func TestSpecPathsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, repo, outside string) // builds repo/pipelines
		file  string                                   // the refused path, "" when nothing is
	}{
		{"link to a file outside", func(t *testing.T, repo, outside string) {
			link(t, filepath.Join(outside, "pgpass"), repo, "pipelines/p.yaml")
		}, "pipelines/p.yaml"},
		{"relative link out of the repository", func(t *testing.T, repo, outside string) {
			link(t, "../../outside/config.json", repo, "pipelines/p.yaml")
		}, "pipelines/p.yaml"},
		{"link into .git", func(t *testing.T, repo, outside string) {
			write(t, filepath.Join(repo, ".git/config"), "[http]\n\textraheader = AUTHORIZATION: basic "+secret+"\n")
			link(t, "../.git/config", repo, "pipelines/p.yaml")
		}, "pipelines/p.yaml"},
		{"link to /dev/zero", func(t *testing.T, repo, outside string) {
			link(t, "/dev/zero", repo, "pipelines/p.yaml")
		}, "pipelines/p.yaml"},
		{"link to a directory outside as backfills", func(t *testing.T, repo, outside string) {
			link(t, outside, repo, "pipelines/backfills")
		}, "pipelines/backfills"},
		{"spec directory a link outside", func(t *testing.T, repo, outside string) {
			os.Remove(filepath.Join(repo, "pipelines"))
			link(t, outside, repo, "pipelines")
		}, "pipelines"},
		{"named pipe", func(t *testing.T, repo, outside string) {
			if err := syscall.Mkfifo(filepath.Join(repo, "pipelines/p.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "pipelines/p.yaml"},
		{"socket", func(t *testing.T, repo, outside string) {
			l, err := net.Listen("unix", filepath.Join(repo, "pipelines/p.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}, "pipelines/p.yaml"},
		{"file over the size cap", func(t *testing.T, repo, outside string) {
			write(t, filepath.Join(repo, "pipelines/p.yaml"), "pipeline: "+secret+"\n")
			if err := os.Truncate(filepath.Join(repo, "pipelines/p.yaml"), MaxFileSize+1); err != nil {
				t.Fatal(err)
			}
		}, "pipelines/p.yaml"},
		{"link inside the repository", func(t *testing.T, repo, outside string) {
			write(t, filepath.Join(repo, "shared.yaml"), goodSpec)
			link(t, "../shared.yaml", repo, "pipelines/p.yaml")
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			repo, outside := filepath.Join(top, "repo"), filepath.Join(top, "outside")
			for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "pipelines"), outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write(t, filepath.Join(outside, "pgpass"), "h:5432:*:app:"+secret+"\n")
			write(t, filepath.Join(outside, "config.json"), `{"token": "`+secret+`"}`)
			write(t, filepath.Join(outside, "p.yaml"), "pipeline: "+secret+"\n")
			c.setup(t, repo, outside)
			p, ds := Load(DirFS(filepath.Join(repo, "pipelines"), Repo{}), "pipelines")
			out := render(p, ds)
			if strings.Contains(out, secret) {
				t.Fatalf("the output quotes a refused file:\n%s", out)
			}
			if c.file == "" {
				if ds.HasErrors() {
					t.Fatalf("refused a link inside the repository:\n%s", out)
				}
				return
			}
			if !has(ds, "RW120", c.file) {
				t.Fatalf("no RW120 for %s:\n%s", c.file, out)
			}
			if len(p.Sources[c.file]) > 0 {
				t.Errorf("the refused file's lines are kept for quoting")
			}
		})
	}
}

// Outside a git work tree, the spec directory is the boundary.
func TestSpecLinksOutsideTheDirectoryWithoutARepository(t *testing.T) {
	top := t.TempDir()
	write(t, filepath.Join(top, "shared.yaml"), "pipeline: "+secret+"\n")
	if err := os.Mkdir(filepath.Join(top, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(t, "../shared.yaml", top, "pipelines/p.yaml")
	p, ds := Load(DirFS(filepath.Join(top, "pipelines"), Repo{}), "pipelines")
	if !has(ds, "RW120", "pipelines/p.yaml") || strings.Contains(render(p, ds), secret) {
		t.Fatalf("want RW120 and no quote:\n%s", render(p, ds))
	}
}

// All the files of a spec directory together are capped too.
func TestSpecDirectoryTotalCapped(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i*(MaxFileSize-1) <= MaxTotalSize; i++ {
		f := filepath.Join(dir, string(rune('a'+i))+".yaml")
		write(t, f, "")
		if err := os.Truncate(f, MaxFileSize-1); err != nil {
			t.Fatal(err)
		}
	}
	_, ds := Load(DirFS(dir, Repo{}), "pipelines")
	found := false
	for _, d := range ds {
		found = found || d.Code == "RW120" && strings.Contains(d.Message, "in all")
	}
	if !found {
		t.Fatalf("no total cap:\n%v", ds)
	}
}

// A file that is not UTF-8 text is refused with the place it goes wrong,
// and nothing of it is quoted.
func TestSpecEncodings(t *testing.T) {
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range goodSpec {
		utf16 = append(utf16, byte(r), 0)
	}
	for _, c := range []struct {
		name string
		data []byte
		pos  string
	}{
		{"UTF-16 with BOM", utf16, "pipelines/p.yaml:1:1"},
		{"UTF-16 without BOM", utf16[2:], "pipelines/p.yaml:1:2"},
		{"invalid UTF-8", []byte("pipeline: p\ntables:\n  t\xe9: {}\n"), "pipelines/p.yaml:3:4"},
		{"NUL byte", []byte("pipeline: p\n  \x00\n"), "pipelines/p.yaml:2:3"},
		{"control character", []byte("pipeline: p\ntables: \x1b[2J\n"), "pipelines/p.yaml:2:9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "p.yaml"), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			p, ds := Load(DirFS(dir, Repo{}), "pipelines")
			if len(ds) != 1 || ds[0].Code != "RW121" || ds[0].Pos.String() != c.pos {
				t.Fatalf("want one RW121 at %s, got:\n%s", c.pos, render(p, ds))
			}
			if p.Sources["pipelines/p.yaml"] != nil {
				t.Errorf("the file's lines are kept for quoting")
			}
		})
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "caf\xe9.yaml"), goodSpec)
	if _, ds := Load(DirFS(dir, Repo{}), "pipelines"); len(ds) != 1 || ds[0].Code != "RW121" || ds[0].File != "pipelines/caf?.yaml" {
		t.Errorf("a file name that is not UTF-8: %v", ds)
	}
	dir = t.TempDir()
	write(t, filepath.Join(dir, "p.yaml"), "\ufeff"+goodSpec)
	if _, ds := Load(DirFS(dir, Repo{}), "pipelines"); ds.HasErrors() {
		t.Errorf("a UTF-8 byte-order mark is refused: %v", ds)
	}
}

func render(p *Project, ds diag.List) string {
	var b bytes.Buffer
	diag.WriteText(&b, ds, func(f string) []string { return p.Sources[f] })
	return b.String()
}

func has(ds diag.List, code, file string) bool {
	for _, d := range ds {
		if d.Code == code && d.File == file {
			return true
		}
	}
	return false
}

func link(t *testing.T, target, repo, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

// FuzzLoad feeds arbitrary bytes to the loader as a pipeline and as a
// backfill file: it must report problems, never panic, and position every
// diagnostic inside the file.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"pipeline: p\ntables:\n  t:\n    replace_where: d >= current_date()\n    columns:\n      d: date\n    query: SELECT d FROM s\n",
		"pipeline: p\ntables:\n  t:\n    replace_where: |\n      d >= date('2026-01-01') &&\n      d < \"2026-02-01\"\n    columns: {d: date}\n    query: >\n      SELECT d\n      FROM s\n",
		"tables: [1, 2]\n",
		"pipeline: p\npipeline: q\n",
		"&a [*a]",
		"pipeline: \"\\u00e9\\t\"\ntables: {}\n",
		"pipeline: p\ntables:\n  t:\n    replace_where: d >= current_date()\n    columns: {d: date, k: text}\n    expect:\n      a: {check: k != 'x'}\n      b: {rows: {min: 1, max_change: 50%}}\n      c: {relationships: {column: k, to: s.t.k}}\n      e: {unique: [d, k], across_table: true, severity: warn}\n    query: SELECT d, k FROM s\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"a.yaml":           {Data: data},
			"backfills/b.yaml": {Data: data},
		}
		p, ds := Load(fsys, "pipelines")
		// The file's own lines: a file refused for its encoding keeps none
		// for quoting, and its diagnostic still points inside it.
		lines := len(lineBreak.Split(string(data), -1))
		for _, d := range ds {
			if d.File == "pipelines/a.yaml" && d.Line > lines+1 {
				t.Errorf("diagnostic past the end of the file (%d lines): %v", lines, d)
			}
		}
		for _, pl := range p.Pipelines {
			for _, tb := range pl.Tables {
				_ = tb.ReplaceWhere.At(1, 1)
				_ = tb.Query.AtOffset(len(tb.Query.Value))
			}
		}
	})
}

// FuzzDirFS reads fuzzed bytes from disk the way rwc lint does, as a spec
// file, as a link inside the repository, beside links out of it, a named
// pipe and a file past the size cap: nothing outside is read or quoted,
// what is not UTF-8 is refused, and no diagnostic points past the file.
func FuzzDirFS(f *testing.F) {
	f.Add([]byte("pipeline: p\ntables: {}\n"), uint8(0))
	f.Add([]byte{0xFF, 0xFE, 'p', 0}, uint8(1))
	f.Add([]byte("pipeline: caf\xe9\n"), uint8(2))
	f.Add([]byte("pipeline: p\n\x00"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, layout uint8) {
		top := t.TempDir()
		repo, specs := filepath.Join(top, "repo"), filepath.Join(top, "repo", "pipelines")
		for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(specs, "backfills")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(top, "secret"), secret)
		file := filepath.Join(specs, "a.yaml")
		if layout%2 == 1 { // the fuzzed file behind a link inside the repository
			write(t, filepath.Join(repo, "real"), "")
			link(t, "../real", repo, "pipelines/a.yaml")
			file = filepath.Join(repo, "real")
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		link(t, "../../secret", repo, "pipelines/b.yaml")
		link(t, "/dev/zero", repo, "pipelines/backfills/z.yaml")
		if layout&2 != 0 {
			if err := syscall.Mkfifo(filepath.Join(specs, "c.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p, ds := Load(DirFS(specs, Repo{}), "pipelines")
		if out := render(p, ds); strings.Contains(out, secret) {
			t.Fatalf("quoted a file outside the repository:\n%s", out)
		}
		for _, name := range []string{"pipelines/b.yaml", "pipelines/backfills/z.yaml"} {
			if !has(ds, "RW120", name) {
				t.Errorf("%s not refused: %v", name, ds)
			}
		}
		if !utf8.Valid(data) && !has(ds, "RW121", "pipelines/a.yaml") {
			t.Errorf("invalid UTF-8 not refused: %v", ds)
		}
		lines := len(lineBreak.Split(string(data), -1))
		for _, d := range ds {
			if d.File == "pipelines/a.yaml" && d.Line > lines+1 {
				t.Errorf("diagnostic past the end of the file (%d lines): %v", lines, d)
			}
		}
	})
}

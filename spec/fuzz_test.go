package spec

import (
	"testing"
	"testing/fstest"
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"a.yaml":           {Data: data},
			"backfills/b.yaml": {Data: data},
		}
		p, ds := Load(fsys, "pipelines")
		lines := len(p.Sources["pipelines/a.yaml"])
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

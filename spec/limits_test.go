package spec

import (
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
)

// A NUL escape maps to where it is written, and the characters after it
// keep their own positions.
func TestTextNULEscape(t *testing.T) {
	src := `reason: "a\0b\x00c\u0000d"`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	txt := newText([]string{src}, "f", doc.Content[0].Content[1])
	for _, want := range []struct {
		off, col int
	}{{0, 10}, {1, 11}, {2, 13}, {3, 14}, {4, 18}, {5, 19}, {6, 25}} {
		if got := txt.AtOffset(want.off); got.Line != 1 || got.Column != want.col {
			t.Errorf("offset %d (%q): at %v, want column %d", want.off, txt.Value[want.off], got, want.col)
		}
	}
}

func TestSchemaReserved(t *testing.T) {
	for name, reserved := range map[string]bool{
		"rwc": true, "pg_catalog": true, "pg_temp": true, "pg_temp_3": true, "pg_toast": true, "pg_x": true,
		"information_schema": true, "public": false, "rwc_data": false, "analytics": false, "pg": false,
	} {
		if got := len(checkSchema(name, diag.Pos{File: "f", Line: 1, Column: 1})) > 0; got != reserved {
			t.Errorf("schema %s: reserved %v, want %v", name, got, reserved)
		}
	}
}

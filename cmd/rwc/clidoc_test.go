package main

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestCLIReference keeps docs/cli.md equal to what the command definitions
// say; regenerate with -update.
func TestCLIReference(t *testing.T) {
	t.Setenv("RWC_TIMEZONE", "")
	var b bytes.Buffer
	writeCLIReference(&b, newRoot(io.Discard))
	const path = "../../docs/cli.md"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/rwc -run TestCLIReference -update)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("docs/cli.md is out of date with the command definitions: go test ./cmd/rwc -run TestCLIReference -update")
	}
}

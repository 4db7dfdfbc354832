package main

import (
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// update rewrites generated and golden files (docs/cli.md,
// testdata/plan/<case>/want.*) from the current output.
var update = flag.Bool("update", false, "rewrite generated docs and golden files from the current output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rwc": func() { os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the command-line scenarios in testdata/script: real
// invocations of rwc with their output and exit status.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

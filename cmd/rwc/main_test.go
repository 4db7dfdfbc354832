package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, map[string]func() int{
		"rwc": func() int { return execute(os.Args[1:]) },
	}))
}

// TestScripts runs the command-line scenarios in testdata/script: real
// invocations of rwc with their output and exit status.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

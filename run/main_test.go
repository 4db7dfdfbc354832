package run_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// Every test here runs against a real PostgreSQL: one throwaway cluster for
// the test binary, a fresh database per test.
func TestMain(m *testing.M) {
	flag.Parse()
	// Build the rwc binary while the cluster starts, when a test that runs
	// it is selected.
	if f := flag.Lookup("test.run"); f != nil {
		re, err := regexp.Compile(f.Value.String())
		if err == nil && (re.MatchString("TestKillWalk") ||
			re.MatchString("TestConcurrentApplies") || re.MatchString("TestBadInputAtRunTime") ||
			re.MatchString("TestLeastPrivilegeRecipe")) {
			go binOnce.Do(buildBinary)
		}
	}
	code := pgtest.Main(m)
	binOnce.Do(func() {}) // wait for a build still running
	removeBinary()
	os.Exit(code)
}

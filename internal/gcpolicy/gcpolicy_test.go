package gcpolicy

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// The policy is read back in a child process, whose environment the test
// controls: the package's init has run before any test can look. Collection
// is off after init and back to the defaults after Restore, unless the
// user set GOGC or GOMEMLIMIT.
func TestPolicy(t *testing.T) {
	if os.Getenv("GCPOLICY_CHILD") != "" {
		if os.Getenv("GCPOLICY_CHILD") == "restore" {
			Restore()
		}
		percent := debug.SetGCPercent(100)
		limit := debug.SetMemoryLimit(-1)
		fmt.Printf("%d %d\n", percent, limit)
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, fmt.Sprintf("-1 %d", Limit)},
		{[]string{"GCPOLICY_CHILD=restore"}, "100 9223372036854775807"},
		{[]string{"GOGC=200"}, "200 9223372036854775807"},
		{[]string{"GOGC=200", "GCPOLICY_CHILD=restore"}, "200 9223372036854775807"},
		{[]string{"GOMEMLIMIT=1GiB"}, "100 1073741824"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPolicy$")
		cmd.Env = append(clean(os.Environ()), append([]string{"GCPOLICY_CHILD=1"}, c.env...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if got := strings.SplitN(string(out), "\n", 2)[0]; got != c.want {
			t.Errorf("env %v: GC percent and limit %q, want %q", c.env, got, c.want)
		}
	}
}

func clean(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "GOGC=") && !strings.HasPrefix(e, "GOMEMLIMIT=") {
			out = append(out, e)
		}
	}
	return out
}

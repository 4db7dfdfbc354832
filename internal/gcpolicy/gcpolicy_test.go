package gcpolicy

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// The policy is read back in a child process, whose environment the test
// controls: the package's init has run before any test can look. Collection
// is off after init, and back to the defaults after Restore or after the
// first collection (the heap reaching Limit, here runtime.GC), unless the
// user set GOGC or GOMEMLIMIT.
func TestPolicy(t *testing.T) {
	if child := os.Getenv("GCPOLICY_CHILD"); child != "" {
		switch child {
		case "restore":
			Restore()
		case "collect":
			runtime.GC()
			waitForDefaults()
		case "grow":
			grow()
			waitForDefaults()
		}
		percent, limit := policy()
		fmt.Printf("%d %d\n", percent, limit)
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, fmt.Sprintf("-1 %d", Limit)},
		{[]string{"GCPOLICY_CHILD=restore"}, "100 9223372036854775807"},
		{[]string{"GCPOLICY_CHILD=collect"}, "100 9223372036854775807"},
		{[]string{"GCPOLICY_CHILD=grow"}, "100 9223372036854775807"},
		{[]string{"GOGC=200"}, "200 9223372036854775807"},
		{[]string{"GOGC=200", "GCPOLICY_CHILD=restore"}, "200 9223372036854775807"},
		{[]string{"GOGC=200", "GCPOLICY_CHILD=collect"}, "200 9223372036854775807"},
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

// policy reads the collector's settings through runtime/metrics: setting
// and putting back the GC percent to read it would race with the cleanup
// that restores the defaults.
func policy() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// restored: both settings have left the start-up policy. Restore sets one
// after the other, on the cleanup's goroutine, so seeing only the first
// changed is seeing it half way (CI once read "100 67108864").
func restored() bool {
	p, l := policy()
	return p != -1 && l != Limit
}

// waitForDefaults gives the cleanup that restores the defaults, which runs
// on a goroutine of its own after the collection, a few seconds at most.
func waitForDefaults() {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if restored() {
			return
		}
	}
}

// sink keeps what grow allocates reachable, so that the heap does reach
// Limit.
var sink [][]byte

// grow allocates past Limit in small pieces, as a command would.
func grow() {
	for n := 0; n < 2*Limit; n += 1 << 20 {
		sink = append(sink, make([]byte, 1<<20))
		if restored() {
			return
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

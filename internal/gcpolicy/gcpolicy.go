// Package gcpolicy keeps the garbage collector idle while the rwc command's
// heap is small. Imported by the command for its side effect, it
// initialises before the JSON Schema library (which compiles every draft's
// meta-schemas at start-up) and CEL. An incremental `rwc apply` of one flow
// allocates about 7 MiB in all, linting 500 flows about 46 MiB: collecting
// took 5–10 ms of library initialisation and about as much again while the
// specs loaded and the flow refreshed (three collections, on two cores
// shared with PostgreSQL), for memory the process soon gives back by
// exiting. So nothing is collected until the heap first reaches Limit;
// that first collection puts Go's defaults back, and a command that goes on
// allocating (a long backfill, thousands of flows) is collected as usual
// from then on.
package gcpolicy

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// Limit is the heap at which collection starts, and the defaults return.
const Limit = 64 << 20

// userSet: an explicit GOGC or GOMEMLIMIT is the user's choice, left alone.
func userSet() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

func init() {
	if userSet() {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Limit)
	restoreAfterFirstCollection()
}

// restoreAfterFirstCollection arms a cleanup that runs once the first
// collection found its object unreachable: collection is off, so that is
// the one the memory limit started (or a runtime.GC). A pointer-free object
// of 16 bytes or less may share its block with others, and its cleanup may
// never run: this one has a pointer.
func restoreAfterFirstCollection() {
	type sentinel struct{ _ *byte }
	runtime.AddCleanup(&sentinel{}, func(struct{}) { Restore() }, struct{}{})
}

// Restore puts garbage collection back to Go's defaults.
func Restore() {
	if userSet() {
		return
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
}

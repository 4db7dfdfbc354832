// Package gcpolicy keeps the garbage collector idle while the rwc command's
// libraries initialise. Imported by the command for its side effect, it
// initialises before the JSON Schema library (which compiles every draft's
// meta-schemas at start-up) and CEL: collecting during their initialisation
// took 5–10 ms of a 110 ms incremental `rwc apply`, for memory that stays
// live anyway. The command calls Restore first thing in main, so the
// collector runs as usual (and a small container's memory is respected)
// for the rest of the run.
package gcpolicy

import (
	"math"
	"os"
	"runtime/debug"
)

// Limit bounds the heap while collection is off: initialisation needs
// about 10 MiB.
const Limit = 256 << 20

// userSet: an explicit GOGC or GOMEMLIMIT is the user's choice, left alone.
func userSet() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

func init() {
	if userSet() {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Limit)
}

// Restore puts garbage collection back to Go's defaults.
func Restore() {
	if userSet() {
		return
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
}

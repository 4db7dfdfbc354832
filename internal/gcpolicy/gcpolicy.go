// Package gcpolicy defers garbage collection in the rwc command until its
// heap reaches a bound. Imported for its side effect, before the libraries
// whose initialisation allocates most of what a short command ever holds
// (JSON Schema meta-schemas, protobuf descriptors, CEL environments):
// collecting during that start-up took about a fifth of an incremental
// `rwc apply`, for memory that stays live anyway.
package gcpolicy

import (
	"os"
	"runtime/debug"
)

// Limit is the heap size at which collection starts; planning 500 flows
// peaks at about 150 MiB with collection off.
const Limit = 256 << 20

func init() {
	// An explicit setting of either variable is the user's choice.
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Limit)
}

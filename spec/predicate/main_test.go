package predicate

import (
	"os"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// TestMain runs the package's tests against a throwaway PostgreSQL cluster,
// started only if a test asks for a database (see pgtest).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

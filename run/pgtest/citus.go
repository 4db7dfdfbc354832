package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
	"github.com/rwc-dev/rwc/run/session"
)

// The Citus cluster: a coordinator and two workers on 127.0.0.1, started on
// the first Citus call, stopped by Main.
var (
	citusOnce  sync.Once
	citusNodes []*pgcluster.Cluster // the coordinator first
	citusErr   error
	// citusWorkers maps a test database's coordinator DSN to its first
	// worker's.
	citusWorkers sync.Map
)

// CitusWorkerDSN is the DSN of the first worker's copy of the database
// whose coordinator DSN Citus returned.
func CitusWorkerDSN(coordinator string) string {
	w, _ := citusWorkers.Load(coordinator)
	s, _ := w.(string)
	return s
}

// CitusAvailable says why this machine's PostgreSQL has no citus
// extension ("": it has one).
func CitusAvailable() string { return pgcluster.CitusMissing() }

// Citus gives a test a fresh database on a Citus cluster, the citus
// extension created in it on the coordinator and both workers, the workers
// added: its handle and DSN are the coordinator's. The databases are
// dropped when the test ends. Without Citus on this machine the test is
// skipped, with the reason (make test says so too).
func Citus(t testing.TB) (*sql.DB, string) {
	t.Helper()
	if why := CitusAvailable(); why != "" {
		t.Skipf("SKIPPED (Citus): %s: %s", t.Name(), why)
	}
	if !inMain.Load() {
		t.Fatal("pgtest.Citus needs TestMain to call pgtest.Main, which tears the clusters down")
	}
	once.Do(start) // the temp dir, and the plain cluster Main stops
	citusOnce.Do(startCitus)
	if citusErr != nil {
		t.Fatalf("pgtest: Citus cluster unavailable: %v", citusErr)
	}
	name := fmt.Sprintf("c%d_%s", seq.Add(1), unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	if len(name) > 63 {
		name = name[:63]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range citusNodes {
			if err := n.DropDatabase(ctx, name); err != nil {
				t.Error(err)
			}
		}
	})
	if err := pgcluster.CitusDatabase(ctx, citusNodes, name); err != nil {
		t.Fatal(err)
	}
	coord := citusNodes[0]
	citusWorkers.Store(coord.DSN(name), citusNodes[1].DSN(name))
	db, err := session.Open(coord.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, coord.DSN(name)
}

// startCitus starts the coordinator and the workers, in this binary's temp
// dir: Citus preloaded, two-phase commit for its distributed transactions,
// few shards (a test's tables are small).
func startCitus() {
	if startErr != nil {
		citusErr = startErr
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := range 3 {
		c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, fmt.Sprintf("citus%d", i)),
			Settings: append(slices.Clone(pgcluster.CitusSettings), "citus.shard_count = 4", "max_connections = 300")})
		if err != nil {
			citusErr = err
			return
		}
		citusNodes = append(citusNodes, c) // before Start, so Main stops a half-started one
		if citusErr = c.Start(ctx); citusErr != nil {
			return
		}
	}
}

// stopCitus stops the Citus cluster, if one was started.
func stopCitus() error {
	var first error
	for _, c := range citusNodes {
		if err := c.Stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

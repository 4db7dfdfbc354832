package pgcluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CitusMissing says why this machine's PostgreSQL has no citus extension
// ("": it has one). Debian's packages have none; docs/citus.md says how to
// get it.
func CitusMissing() string {
	share, err := shareDir()
	if err != nil {
		return err.Error()
	}
	control := filepath.Join(share, "extension", "citus.control")
	if _, err := os.Stat(control); err != nil {
		return "the server has no citus extension (" + control + " is missing; see docs/citus.md)"
	}
	return ""
}

// shareDir is the server's share directory (extensions' control files):
// pg_config's, or, without it, Debian's beside the server binaries.
func shareDir() (string, error) {
	if out, err := exec.Command("pg_config", "--sharedir").Output(); err == nil {
		return strings.TrimSpace(string(out)), nil
	}
	bin, err := BinDir()
	if err != nil {
		return "", err
	}
	return filepath.Join("/usr/share/postgresql", filepath.Base(filepath.Dir(bin))), nil
}

// CitusSettings are a Citus node's settings on this machine, coordinator
// or worker: Citus preloaded, two-phase commit for its distributed
// transactions, and no TLS between the nodes (they trust 127.0.0.1, and
// a server run as another user cannot read the client's certificates).
var CitusSettings = []string{"shared_preload_libraries = 'citus'", "max_prepared_transactions = 64", "citus.node_conninfo = 'sslmode=disable'"}

// CitusDatabase creates database name on every node (nodes[0] is the
// coordinator), with the citus extension in it, and adds the workers to
// the coordinator's.
func CitusDatabase(ctx context.Context, nodes []*Cluster, name string) error {
	for _, n := range nodes {
		if err := n.CreateDatabase(ctx, name); err != nil {
			return err
		}
		if err := execIn(ctx, n.DSN(name), "CREATE EXTENSION citus"); err != nil {
			return err
		}
	}
	if err := execIn(ctx, nodes[0].DSN(name), fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %d)", nodes[0].Port())); err != nil {
		return err
	}
	for _, w := range nodes[1:] {
		if err := addNode(ctx, nodes[0].DSN(name), w.Port()); err != nil {
			return err
		}
	}
	return nil
}

// addNode adds the worker on port to the coordinator's database (dsn). A
// worker busy with other databases' set-up now and then drops the
// coordinator's first connection ("failure on connection marked as
// essential"): it is tried a few times.
func addNode(ctx context.Context, dsn string, port int) error {
	var err error
	for range 5 {
		if err = execIn(ctx, dsn, fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %d)", port)); err == nil || !strings.Contains(err.Error(), "connection") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(300 * time.Millisecond):
		}
	}
	return err
}

func execIn(ctx context.Context, dsn string, stmts ...string) error {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("pgcluster: %s: %w", s, err)
		}
	}
	return nil
}

package run

import (
	"context"
	"database/sql"
	"io"
	"path/filepath"

	"github.com/rwc-dev/rwc/run/pgcluster"
)

// LocalDir is where the embedded local PostgreSQL keeps its data, relative
// to the project directory.
const LocalDir = ".rwc/pgdata"

// localDB is the database rwc uses inside the local cluster.
const localDB = "rwc"

// Local is the project's embedded PostgreSQL: the default when no database
// is named, so that rwc works on a laptop with nothing set up.
type Local struct{ c *pgcluster.Cluster }

// OpenLocal opens (and on first use initialises) the local cluster under
// dir/.rwc. It does not start it.
func OpenLocal(dir string, log io.Writer) (*Local, error) {
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(dir, LocalDir), Fsync: true, Log: log})
	if err != nil {
		return nil, err
	}
	return &Local{c}, nil
}

// LocalExists reports whether dir has a local cluster at all.
func LocalExists(dir string) bool { return pgcluster.Initialized(filepath.Join(dir, LocalDir)) }

// Start starts the server if it is not running and creates rwc's database.
func (l *Local) Start(ctx context.Context) error {
	if err := l.c.Start(ctx); err != nil {
		return err
	}
	db, err := sql.Open("postgres", l.c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, localDB).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if err := l.c.CreateDatabase(ctx, localDB); err != nil {
			// Another rwc may have created it at the same moment.
			if err2 := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, localDB).Scan(&exists); err2 != nil || !exists {
				return err
			}
		}
	}
	return nil
}

// Stop stops the server; stopping a stopped server is fine.
func (l *Local) Stop() error { return l.c.Stop() }

// Running reports whether the server is up.
func (l *Local) Running() bool { return l.c.Running() }

// URL is the connection URL of rwc's database in the local cluster.
func (l *Local) URL() string { return l.c.DSN(localDB) }

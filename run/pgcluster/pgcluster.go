// Package pgcluster manages a private PostgreSQL cluster in a directory: the
// throwaway clusters of tests (run/pgtest) and the local database of
// `rwc local start|stop|url` under .rwc/.
//
// The cluster only listens on 127.0.0.1 (no Unix socket at all, so the long
// data directory paths of temp dirs never hit the 107-byte socket path
// limit) and trusts every connection, so it must never hold anything secret.
//
// Files (DataDir is the PostgreSQL data directory itself):
//
//	DataDir/rwc.port    port remembered across restarts
//	DataDir/rwc.conf    settings rewritten on every Start (included by postgresql.conf)
//	DataDir/server.log  server log; its tail is quoted when starting fails
//	DataDir.lock        flock serialising Open/Start/Stop between processes
package pgcluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Options configure Open.
type Options struct {
	DataDir string // PostgreSQL data directory, e.g. ".rwc/pgdata"; created and initialised if missing
	Port    int    // 0 = remembered port, else a free one on 127.0.0.1
	Fsync   bool   // false trades crash safety for speed (tests)
	// Settings are further postgresql.conf lines (tests: wal_level =
	// logical, to subscribe one database to another's publication).
	Settings []string
	Log      io.Writer // progress messages for the user; nil = silent
}

// Cluster is a handle on one data directory. Several handles (in one or many
// processes) may refer to the same directory; the file lock keeps them sane.
type Cluster struct {
	dir      string
	bin      string
	port     int
	explicit bool // Options.Port was given: never move to another port
	fsync    bool
	settings []string
	log      io.Writer
	as       *runAs // nil: run the server as ourselves
}

// Initialized reports whether dataDir already holds a PostgreSQL cluster,
// so callers such as `rwc local stop` can avoid creating one just to stop it.
func Initialized(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "PG_VERSION"))
	return err == nil
}

// Open prepares the cluster in opts.DataDir, running initdb if it is not
// initialised yet, and settles its port. It does not start the server.
func Open(opts Options) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, errors.New("pgcluster: empty DataDir")
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	as, err := serverUser()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin, port: opts.Port, explicit: opts.Port != 0,
		fsync: opts.Fsync, settings: opts.Settings, log: opts.Log, as: as}
	if c.log == nil {
		c.log = io.Discard
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	unlock, err := c.lock(context.Background())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.makeReachable(); err != nil {
		return nil, err
	}
	if !Initialized(dir) {
		if err := c.initdb(); err != nil {
			return nil, err
		}
	}
	return c, c.settlePort()
}

// settlePort picks the port: explicit option, else remembered, else free.
func (c *Cluster) settlePort() error {
	if !c.explicit {
		b, err := os.ReadFile(c.path("rwc.port"))
		if err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 {
				c.port = p
				return nil
			}
		}
		if c.port, err = freePort(); err != nil {
			return err
		}
	}
	return c.writeFile("rwc.port", strconv.Itoa(c.port)+"\n")
}

// freePort asks the kernel for an unused port. Another program may take it
// before the server binds it; Start repicks in that case (see Start).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Port is the TCP port on 127.0.0.1 the server listens (or will listen) on.
func (c *Cluster) Port() int { return c.port }

// DataDir is the absolute data directory.
func (c *Cluster) DataDir() string { return c.dir }

// LogFile is the server log.
func (c *Cluster) LogFile() string { return c.path("server.log") }

// DSN is a lib/pq URL for database dbname as the superuser "postgres".
func (c *Cluster) DSN(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(dbname))
}

// Start starts the server and waits until it accepts connections. It does
// nothing if the server is already running.
func (c *Cluster) Start(ctx context.Context) error {
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if c.Running() {
		return nil
	}
	if c.serverPID() == 0 {
		// A postmaster.pid naming a process that is not a postgres (pid reused
		// after a crash or reboot) would make the server refuse to start.
		os.Remove(c.path("postmaster.pid"))
	}
	for attempt := 0; ; attempt++ {
		if !portFree(c.port) {
			if c.explicit || attempt > 3 {
				return fmt.Errorf("pgcluster: port %d on 127.0.0.1 is used by another program", c.port)
			}
			old := c.port
			if c.port, err = freePort(); err != nil {
				return err
			}
			if err := c.writeFile("rwc.port", strconv.Itoa(c.port)+"\n"); err != nil {
				return err
			}
			fmt.Fprintf(c.log, "port %d is taken by another program; using %d\n", old, c.port)
		}
		fmt.Fprintf(c.log, "starting PostgreSQL on 127.0.0.1:%d (data in %s)\n", c.port, c.dir)
		err = c.startOnce(ctx)
		// The port can be grabbed between our check and the server's bind.
		if err != nil && !c.explicit && attempt < 3 && strings.Contains(err.Error(), "Address already in use") {
			continue
		}
		return err
	}
}

func (c *Cluster) startOnce(ctx context.Context) error {
	conf := fmt.Sprintf("# Written by rwc before every start; changes are overwritten.\n"+
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\n", c.port)
	if !c.fsync {
		conf += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	}
	for _, line := range c.settings {
		conf += line + "\n"
	}
	if err := c.writeFile("rwc.conf", conf); err != nil {
		return err
	}
	logStart := fileSize(c.LogFile())
	if out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-s", "-D", c.dir, "-l", c.LogFile()); err != nil {
		return fmt.Errorf("pgcluster: starting PostgreSQL in %s failed: %v\n%s\n--- %s ---\n%s",
			c.dir, err, out, c.LogFile(), logTail(c.LogFile(), logStart))
	}
	if err := c.ping(ctx); err != nil {
		return fmt.Errorf("pgcluster: PostgreSQL started but does not accept connections: %w\n--- %s ---\n%s",
			err, c.LogFile(), logTail(c.LogFile(), logStart))
	}
	return nil
}

// Stop shuts the server down (fast mode: connections are cut, transactions
// rolled back). It does nothing if the server is not running.
func (c *Cluster) Stop() error {
	unlock, err := c.lock(context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	if c.serverPID() == 0 {
		return nil
	}
	fmt.Fprintf(c.log, "stopping PostgreSQL in %s\n", c.dir)
	if out, err := c.run(context.Background(), "pg_ctl", "stop", "-m", "fast", "-w", "-t", "60", "-s", "-D", c.dir); err != nil {
		return fmt.Errorf("pgcluster: stopping PostgreSQL in %s: %v\n%s", c.dir, err, out)
	}
	return nil
}

// Running reports whether the server of this data directory is up and
// answers on its port.
func (c *Cluster) Running() bool {
	if c.serverPID() == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.ping(ctx) == nil
}

func (c *Cluster) ping(ctx context.Context) error {
	db, err := sql.Open("postgres", c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// CreateDatabase creates database name (owned by postgres).
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	return c.exec(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name))
}

// DropDatabase drops database name if it exists, disconnecting its sessions.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	return c.exec(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
}

func (c *Cluster) exec(ctx context.Context, stmt string) error {
	db, err := sql.Open("postgres", c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("pgcluster: %s: %w", stmt, err)
	}
	return nil
}

func (c *Cluster) path(name string) string { return filepath.Join(c.dir, name) }

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last lines written to the log since offset from.
func logTail(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	if from <= int64(len(b)) {
		b = b[from:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

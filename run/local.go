package run

import (
	"context"
	"database/sql"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

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

// Redact hides the password of a connection URL or key=value string, for
// every message and log line rwc prints: in the user info, in a password=
// query parameter, in "password = x" key/value form, and in a URL too
// malformed to parse (everything between :// and @ goes).
func Redact(dsn string) string {
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				if _, has := u.User.Password(); has {
					u.User = url.UserPassword(u.User.Username(), "xxxxx")
				}
			}
			q := u.Query()
			if q.Has("password") {
				q.Set("password", "xxxxx")
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
		scheme, rest, _ := strings.Cut(dsn, "://")
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = "xxxxx" + rest[at:]
		}
		if i := strings.IndexAny(rest, "?"); i >= 0 {
			rest = rest[:i] + "?xxxxx"
		}
		return scheme + "://" + rest
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// kvPassword matches password=value in a key/value connection string,
// quoted or not, with optional spaces around '='.
var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactText hides every connection string's password inside a longer
// text, such as a driver's error message.
func RedactText(s, dsn string) string {
	if dsn == "" {
		return s
	}
	s = strings.ReplaceAll(s, dsn, Redact(dsn))
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	return kvPassword.ReplaceAllString(s, "${1}xxxxx")
}

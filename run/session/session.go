// Package session opens the database sessions rwc works in. Every session
// starts with the settings under which rwc's SQL parser (pg_query, and so
// rwc lint) reads a query, and is checked to have them before it is used:
// a server that tokenised text differently, say with
// standard_conforming_strings = off set on the database, would split a
// query lint read as one SELECT into other statements.
package session

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/libpq"

	"github.com/rwc-dev/rwc/internal/version"
)

// ParserSettings are the settings that change how PostgreSQL tokenises
// text, at the values pg_query assumes (client_encoding is lib/pq's own
// and must stay UTF8 for the same reason).
var ParserSettings = []Setting{
	{"standard_conforming_strings", "on"},
	{"backslash_quote", "safe_encoding"},
	{"client_encoding", "UTF8"},
}

// Setting is one run-time parameter and the value rwc needs.
type Setting struct{ Name, Value string }

// LockTimeout is the setting that bounds every lock wait of a session at d
// (at least a millisecond: lock_timeout = 0 would wait for ever).
func LockTimeout(d time.Duration) Setting {
	return Setting{"lock_timeout", fmt.Sprintf("%dms", max(d.Milliseconds(), 1))}
}

// ApplicationName names rwc's sessions in pg_stat_activity and the server
// log, with the version that opened them, unless the connection string
// names them itself.
var ApplicationName = Name + " " + version.String()

// Name is what every rwc session's application_name starts with. An rwc
// that named its sessions just that, without its version, set no
// ConnectionCheck.
const Name = "rwc"

// FlowApplicationName is the name of the session holding flow's lock: the
// session to look for when the flow is busy.
func FlowApplicationName(flow string) string { return ApplicationName + " flow=" + flow }

// ConnectionCheck has the server poll a session's client while a statement
// runs, so that the statement of an rwc that was killed (kill -9, a CI
// runner torn down) ends within about a second, its transaction rolled
// back and its flow's lock released, instead of running on, holding the
// lock, until it next writes to the client. PostgreSQL 14 has it, which
// rwc needs anyway.
var ConnectionCheck = Setting{"client_connection_check_interval", "1s"}

// Reassert is the statement that puts ParserSettings back for the rest of
// the current transaction. rwc sends it before each statement that embeds
// a user's SQL: a function the previous one called may have changed them.
var Reassert = func() string {
	var b strings.Builder
	for _, s := range ParserSettings {
		fmt.Fprintf(&b, "SET LOCAL %s = %s; ", s.Name, pq.QuoteLiteral(s.Value))
	}
	return strings.TrimSuffix(b.String(), " ")
}()

// Open returns a pool of sessions to the database dsn names, each started
// with ParserSettings and checked to have them, with ConnectionCheck, and
// with extra (sent at
// startup, as ParserSettings are, and so what RESET and DISCARD ALL return
// to; not checked). It does not connect yet.
func Open(dsn string, extra ...Setting) (*sql.DB, error) {
	c, err := NewConnector(dsn, extra...)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// NewConnector is Open's connector, for callers that build their own pool.
func NewConnector(dsn string, extra ...Setting) (driver.Connector, error) {
	cfg, err := libpq.Config(dsn, os.LookupEnv) // as psql would connect

	if err != nil {
		return nil, err
	}
	if cfg.Runtime == nil {
		cfg.Runtime = map[string]string{}
	}
	for _, s := range ParserSettings {
		if s.Name != "client_encoding" { // lib/pq sends it and refuses any other
			cfg.Runtime[s.Name] = s.Value
		}
	}
	for _, s := range append([]Setting{ConnectionCheck}, extra...) {
		cfg.Runtime[s.Name] = s.Value
	}
	if cfg.ApplicationName == "" {
		cfg.ApplicationName = ApplicationName
	}
	// A statement with parameters in one round trip (Parse, Bind and
	// Execute sent together) rather than two: lib/pq otherwise waits for
	// the parameters' types first. About 25 such statements run in a
	// refresh's transaction. Only a []byte argument is sent as binary;
	// rwc passes text (JSON as string, arrays through pq.Array).
	cfg.BinaryParameters = true
	c, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	return connector{c}, nil
}

type connector struct{ pq *pq.Connector }

func (c connector) Driver() driver.Driver { return c.pq.Driver() }

// Connect opens a session and refuses it unless the server reports
// ParserSettings: a connection pooler, a server's options or the
// connection string's own options= may override what the startup sent.
func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := Verify(ctx, conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Verify says which ParserSettings the open session conn lacks (nil when
// it has them all).
func Verify(ctx context.Context, conn driver.Conn) error {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("the driver cannot run queries")
	}
	names := make([]string, len(ParserSettings))
	for i, s := range ParserSettings {
		names[i] = "current_setting(" + pq.QuoteLiteral(s.Name) + ")"
	}
	rows, err := q.QueryContext(ctx, "SELECT "+strings.Join(names, ", "), nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	got := make([]driver.Value, len(ParserSettings))
	if err := rows.Next(got); err != nil {
		return err
	}
	for i, s := range ParserSettings {
		if v := fmt.Sprint(text(got[i])); !strings.EqualFold(v, s.Value) {
			return fmt.Errorf("the session has %s = %s, and rwc reads SQL as PostgreSQL does with %s = %s: "+
				"remove the setting from the connection string's options, the role or the connection pooler", s.Name, v, s.Name, s.Value)
		}
	}
	return nil
}

func text(v driver.Value) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

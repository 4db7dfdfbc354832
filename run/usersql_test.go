package run

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/run/session"
)

// A statement embedding a user's SQL reaches the server as one statement:
// the extended protocol refuses a second one where the simple protocol
// would run it.
func TestUserSQLIsOneStatement(t *testing.T) {
	db, _ := pgtest.DB(t)
	pgtest.Exec(t, db, `CREATE TABLE victim (v int)`)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = userExec(context.Background(), tx, `SELECT 1; DROP TABLE victim`)
	if err == nil || !strings.Contains(err.Error(), "cannot insert multiple commands") {
		t.Fatalf("two statements: %v", err)
	}
	tx.Rollback()
	if pgtest.Count(t, db, `SELECT count(*) FROM pg_class WHERE relname = 'victim'`) != 1 {
		t.Fatal("victim was dropped")
	}
}

// A function a user's statement called may change the parser's settings
// for the rest of the session; the next user statement is read with them
// put back.
func TestUserSQLReassertsParserSettings(t *testing.T) {
	db, _ := pgtest.DB(t)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := userExec(ctx, tx, `SELECT set_config('standard_conforming_strings', 'off', false)`); err != nil {
		t.Fatal(err)
	}
	// Both shapes of the describe: the query alone, and beside the
	// collations of a window's text columns (a, whose collation is read
	// after the query's own columns).
	for _, texts := range [][]string{nil, {"a"}} {
		d, err := describeQuery(ctx, tx, `SELECT '\' AS a, 1 AS b`, texts)
		if err != nil {
			t.Fatal(err)
		}
		if types := d.columns; len(types) != 2 || types[1].Name() != "b" || len(d.collations) != 0 {
			t.Fatalf("with texts %v: read as %d columns, %v", texts, len(types), d.collations)
		}
	}
}

// Every session rwc opens has the parser's settings, whatever the database
// or the role says; one where they cannot be had is refused, saying which.
func TestSessionsHaveParserSettings(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, `DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database());
		EXECUTE format('ALTER DATABASE %I SET backslash_quote = off', current_database()); END$$`)
	s, err := session.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var scs, bq, app, check string
	if err := s.QueryRow(`SELECT current_setting('standard_conforming_strings'), current_setting('backslash_quote'), current_setting('application_name'),
		current_setting('client_connection_check_interval')`).Scan(&scs, &bq, &app, &check); err != nil {
		t.Fatal(err)
	}
	if scs != "on" || bq != "safe_encoding" || app != session.ApplicationName || !strings.HasPrefix(app, "rwc ") || check != "1s" {
		t.Errorf("session settings: standard_conforming_strings %s, backslash_quote %s, application_name %s, client_connection_check_interval %s", scs, bq, app, check)
	}
}

// A session without the parser's settings (a connection pooler that drops
// the startup parameters would give one) is refused, saying which.
func TestSessionRefusedWithoutParserSettings(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, `DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database()); END$$`)
	c, err := pq.NewConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = session.Verify(context.Background(), conn)
	if err == nil || !strings.Contains(err.Error(), "standard_conforming_strings = off") {
		t.Fatalf("Verify: %v", err)
	}
}

// Describing a query takes no lock the refresh keeps: planning it locks
// its sources, and a source's TRUNCATE or ALTER would otherwise wait for
// the whole refresh even where the refresh never reads that source.
func TestDescribeKeepsNoLocks(t *testing.T) {
	db, _ := pgtest.DB(t)
	pgtest.Exec(t, db, `CREATE TABLE src (x int)`)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := describeQuery(ctx, tx, `SELECT x FROM src`, nil); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'src'::regclass`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("the transaction holds %d locks on src after describing the query", held)
	}
}

// A session the server refuses is said in rwc's words, with what to check.
func TestConnectProblem(t *testing.T) {
	_, dsn := pgtest.DB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database"
	s, err := session.Open(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msg := ConnectProblem(s.Ping())
	if strings.Contains(msg, "pq:") || !strings.Contains(msg, "SQLSTATE 3D000") || !strings.Contains(msg, "check the database name") {
		t.Errorf("ConnectProblem = %q", msg)
	}
}

// A state schema rwc may not create is said in rwc's words, with the
// privilege to grant.
func TestStateProblem(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, `CREATE ROLE weak LOGIN`)
	t.Cleanup(func() { db.Exec(`DROP ROLE IF EXISTS weak`) })
	pgtest.Exec(t, db, `DO $$BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM PUBLIC', current_database()); END$$`)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("weak")
	s, err := session.Open(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msg := StateProblem(Migrate(context.Background(), s))
	if strings.Contains(msg, "pq:") || !strings.Contains(msg, "SQLSTATE 42501") || !strings.Contains(msg, "least-privilege") {
		t.Errorf("StateProblem = %q", msg)
	}
}

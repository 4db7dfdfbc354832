package pgtype_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// boundaryTypes sit just inside and just outside every modifier limit
// PostgreSQL 15 enforces, for each type that takes a modifier.
var boundaryTypes = []string{
	"varchar(1)", "varchar(0)", "varchar(10485760)", "varchar(10485761)", "varchar(99999999)",
	"character varying(10485760)", "character varying(10485761)",
	"char(1)", "char(0)", "char(10485760)", "char(10485761)", "bpchar(0)", "character(10485761)",
	"numeric(1)", "numeric(0)", "numeric(1000)", "numeric(1001)", "numeric(1001,0)", "decimal(1001,0)",
	"numeric(10,0)", "numeric(10,10)", "numeric(10,11)", "numeric(10,-1)",
	"numeric(1000,1000)", "numeric(1000,1001)", "numeric(5,-1000)", "numeric(5,-1001)",
	"timestamp(0)", "timestamp(6)", "timestamp(7)", "timestamptz(6)", "timestamptz(7)",
	"time(0)", "time(6)", "time(7)", "timetz(6)", "timetz(7)",
	"interval(0)", "interval(6)", "interval(7)",
	"bit(1)", "bit(0)", "bit(83886080)", "bit(83886081)",
	"varbit(1)", "varbit(0)", "varbit(83886080)", "varbit(83886081)", "bit varying(83886081)",
	"varchar(0)[]", "varchar(10485760)[]", "varchar(10485761)[]", "numeric(1001,0)[]",
	"timestamp(6)[]", "timestamp(7)[]", "time(7)[]", "bit(0)[]",
	"varchar(007)", "varchar(99999999999999999999)",
	// Without a modifier, for the canonical spelling: char is character(1).
	"varchar", "char", "bit", "varbit", "numeric", "timestamp", "timestamptz", "time", "timetz", "interval",
}

// TestModifierLimitsMatchServer: pgtype.Parse accepts exactly the types
// PostgreSQL 15 creates as written. A type the server accepts only with a
// warning (timestamp(7) becomes timestamp(6)) counts as refused: the
// table would not have the declared type. For every accepted type the
// canonical spelling rwc writes into CREATE TABLE must mean the same type.
func TestModifierLimitsMatchServer(t *testing.T) {
	s := newSession(t)
	for _, typ := range boundaryTypes {
		want, err := s.create(typ)
		serverOK := err == nil
		got, perr := pgtype.Parse(typ)
		if (perr == nil) != serverOK {
			t.Errorf("%s: pgtype.Parse error %v; server: %v", typ, perr, err)
			continue
		}
		if perr != nil {
			continue
		}
		canon, err := s.create(got.Canonical)
		if err != nil || canon != want {
			t.Errorf("%s: canonical %q makes %q (%v), the user's spelling %q", typ, got.Canonical, canon, err, want)
		}
	}
}

type session struct {
	t      *testing.T
	conn   *sql.Conn
	notice []string
}

func newSession(t *testing.T) *session {
	_, dsn := pgtest.DB(t)
	base, err := pq.NewConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t}
	db := sql.OpenDB(pq.ConnectorWithNoticeHandler(base, func(e *pq.Error) { s.notice = append(s.notice, e.Message) }))
	t.Cleanup(func() { db.Close() })
	if s.conn, err = db.Conn(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.conn.Close() })
	return s
}

// create makes a temporary table with one column of typ and returns the
// column's type as the server prints it. A warning is an error here.
func (s *session) create(typ string) (string, error) {
	ctx := context.Background()
	s.notice = nil
	if _, err := s.conn.ExecContext(ctx, "CREATE TEMP TABLE t (c "+typ+")"); err != nil {
		return "", err
	}
	defer s.conn.ExecContext(ctx, "DROP TABLE t")
	if len(s.notice) > 0 {
		return "", &pq.Error{Message: strings.Join(s.notice, "; ")}
	}
	var out string
	err := s.conn.QueryRowContext(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = 't'::regclass AND attname = 'c'`).Scan(&out)
	return out, err
}

// TestParseLimits pins the bounds and canonical spellings without a server
// (RWC_SKIP_PG=1 skips the differential test above).
func TestParseLimits(t *testing.T) {
	for typ, want := range map[string]string{
		"varchar(10485760)": "character varying(10485760)", "varchar(10485761)": "",
		"char(0)": "", "numeric(1000,-1000)": "numeric(1000,-1000)", "numeric(1001,0)": "",
		"timestamp(6)": "timestamp(6) without time zone", "timestamptz(7)": "",
		"time(3)": "time(3) without time zone", "timetz(3)[]": "time(3) with time zone[]",
		"interval(3)": "interval(3)", "bit(83886081)": "", "varchar(007)": "character varying(7)",
		"text(3)": "",
	} {
		got, err := pgtype.Parse(typ)
		if got.Canonical != want || (err == nil) != (want != "") {
			t.Errorf("Parse(%q) = %q, %v; want %q", typ, got.Canonical, err, want)
		}
	}
}

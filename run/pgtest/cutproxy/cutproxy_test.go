package cutproxy_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/run/pgtest/cutproxy"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// through starts a proxy with opts and returns it with one connection
// through it.
func through(t *testing.T, dsn string, opts cutproxy.Options) (*cutproxy.Proxy, *sql.Conn) {
	t.Helper()
	up, err := cutproxy.Upstream(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cutproxy.Start(up, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	pdsn, err := p.DSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", pdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

// The proxy counts each simple query and each Sync as one boundary, passes
// the Nth to the server and cuts: a cut inside a transaction rolls it back,
// a cut after its COMMIT leaves it committed though the client never heard
// so, and no connection gets through after a cut.
func TestCutAfterNthBoundary(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, `CREATE TABLE x (v int)`)
	ctx := context.Background()
	stmts := []string{"BEGIN", "INSERT INTO x VALUES (1)", "INSERT INTO x VALUES (2)", "COMMIT"}
	for _, tc := range []struct {
		cut  int
		want []string // the rows of x after the cut
	}{
		{0, []string{"(1)", "(2)"}},
		{1, []string{}},
		{2, []string{}},
		{3, []string{}},
		{4, []string{"(1)", "(2)"}},
	} {
		pgtest.Exec(t, db, `TRUNCATE x`)
		p, c := through(t, dsn, cutproxy.Options{CutAfter: tc.cut})
		var failed int
		for i, s := range stmts {
			_, err := c.ExecContext(ctx, s)
			if (err != nil) != (tc.cut != 0 && i+1 >= tc.cut) {
				t.Fatalf("cut after %d: statement %d (%s): %v", tc.cut, i+1, s, err)
			}
			if err != nil {
				failed++
			}
		}
		if tc.cut != 0 {
			select {
			case <-p.Cut():
			default:
				t.Fatalf("cut after %d: not cut", tc.cut)
			}
		}
		if tc.cut != 0 {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := p.WaitGone(wctx, db); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		pgtest.SameRows(t, "x after the cut", pgtest.Rows(t, db, `SELECT * FROM x`), tc.want)
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		wantCount := tc.cut
		if tc.cut == 0 {
			wantCount = len(stmts)
		}
		if p.Count() != wantCount || len(p.Log()) != wantCount {
			t.Fatalf("cut after %d: counted %d, logged %v", tc.cut, p.Count(), p.Log())
		}
		if tc.cut != 0 {
			if got := p.Log()[tc.cut-1].SQL; got != stmts[tc.cut-1] {
				t.Fatalf("cut after %d: last boundary %q, want %q", tc.cut, got, stmts[tc.cut-1])
			}
			// A dead client opens nothing.
			pdsn, _ := p.DSN(dsn)
			db2, _ := sql.Open("postgres", pdsn)
			if err := db2.PingContext(ctx); err == nil {
				t.Fatalf("cut after %d: a new connection got through", tc.cut)
			}
			db2.Close()
		}
	}
}

// CutWhen cuts right after the boundary it first holds for, whatever its
// number: inside the transaction, which rolls back.
func TestCutWhen(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, `CREATE TABLE x (v int)`)
	ctx := context.Background()
	p, c := through(t, dsn, cutproxy.Options{CutWhen: func(b cutproxy.Boundary) bool { return strings.Contains(b.SQL, "(2)") }})
	for _, s := range []string{"BEGIN", "INSERT INTO x VALUES (1)", "INSERT INTO x VALUES (2)", "COMMIT"} {
		c.ExecContext(ctx, s)
	}
	select {
	case <-p.Cut():
	default:
		t.Fatal("not cut")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.WaitGone(wctx, db); err != nil {
		t.Fatal(err)
	}
	if p.Count() != 3 || p.Log()[2].SQL != "INSERT INTO x VALUES (2)" {
		t.Fatalf("counted %d, logged %v", p.Count(), p.Log())
	}
	pgtest.SameRows(t, "x after the cut", pgtest.Rows(t, db, `SELECT * FROM x`), []string{})
}

// A statement with parameters is two round trips, each ending in a Sync;
// the log names the statement for both.
func TestExtendedProtocolCounts(t *testing.T) {
	_, dsn := pgtest.DB(t)
	p, c := through(t, dsn, cutproxy.Options{})
	var v int
	if err := c.QueryRowContext(context.Background(), `SELECT $1::int + 1`, 41).Scan(&v); err != nil || v != 42 {
		t.Fatalf("SELECT: %d, %v", v, err)
	}
	log := p.Log()
	if len(log) != 2 || log[0].Type != 'S' || log[1].Type != 'S' || !strings.Contains(log[1].SQL, "$1::int + 1") {
		t.Fatalf("log %v, want two Syncs of the SELECT", log)
	}
}

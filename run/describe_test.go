package run_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/pgtest"
)

// TestDescribeQueryRunsNothing: rwc import types a query from a pull
// request by planning it, and nothing the query could do runs: not a
// function that writes, not a second statement after a closing bracket and
// COMMIT, not a data-modifying CTE. Each is refused or planned only, and
// the table is left as it was.
func TestDescribeQueryRunsNothing(t *testing.T) {
	db, _ := pgtest.DB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE victim (n int); INSERT INTO victim VALUES (1);
		CREATE FUNCTION wipe() RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM victim RETURNING 1'`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT wipe() AS n",
		"SELECT n FROM victim WHERE wipe() = 1",
		"SELECT 1 AS n) AS src; COMMIT; DELETE FROM victim; SELECT * FROM (SELECT 1 AS n",
		"WITH d AS (DELETE FROM victim RETURNING n) SELECT n FROM d",
		"SELECT n FROM (SELECT wipe() AS n) s",
	} {
		_, err := run.DescribeQuery(ctx, db, q)
		if err != nil && strings.Contains(err.Error(), "pq:") {
			t.Errorf("%s: a raw driver message: %v", q, err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM victim").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s: victim has %d rows (%v)", q, n, err)
		}
	}
}

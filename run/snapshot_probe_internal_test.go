package run

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// A probe run aside sees the refresh transaction's snapshot, not the data
// as it is when the probe runs: a row committed by someone else after the
// snapshot is not in it, or its fingerprint would be stored as seen and the
// next refresh would miss the change. The same holds when there is no
// second connection and the probe runs on the transaction itself.
func TestAsideProbeSeesTheRefreshSnapshot(t *testing.T) {
	db, dsn := pgtest.DB(t)
	other, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pgtest.Exec(t, db, `CREATE TABLE src (v integer); INSERT INTO src VALUES (1), (2)`)
	count := func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
		var n int64
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM src`).Scan(&n)
		return []fingerprintRow{{n: n}}, err
	}
	for _, poolSize := range []int{0, 1} { // 0: no limit, a second connection; 1: none to be had
		db.SetMaxOpenConns(poolSize)
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := count(ctx, tx); err != nil { // takes the snapshot
			t.Fatal(err)
		}
		pgtest.Exec(t, other, `INSERT INTO src VALUES (3)`)
		r := New(db, Options{LockTimeout: 5 * time.Second})
		spare := r.spares(ctx)
		result, stop, err := r.aside(ctx, tx, spare, count)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := result()
		stop()
		if err != nil {
			t.Fatal(err)
		}
		if rows[0].n != 2 {
			t.Errorf("pool of %d: the aside probe counted %d rows, want the snapshot's 2", poolSize, rows[0].n)
		}
		tx.Rollback()
		spare.release()
		pgtest.Exec(t, db, `DELETE FROM src WHERE v = 3`)
	}
}

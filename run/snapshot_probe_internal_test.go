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
	db, other, count := twoSessions(t, "src")
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
		a, err := r.aside(ctx, tx, spare, []string{"src"}, count)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := a.result()
		a.stop()
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

// The waits between a refresh and its aside probes are invisible to
// PostgreSQL's deadlock detector. Someone's ACCESS EXCLUSIVE request (an
// ALTER TABLE, a TRUNCATE) queued behind the refresh's own locks must not
// hold up a probe the refresh waits for, or both would wait until
// lock_timeout.
func TestAsideProbeNotQueuedBehindTheRefresh(t *testing.T) {
	db, other, count := twoSessions(t, "tgt")
	ctx := context.Background()
	r := New(db, Options{LockTimeout: 3 * time.Second})
	// queueExclusive asks for an ACCESS EXCLUSIVE lock on tgt from another
	// session and returns once the request waits; done ends it.
	queueExclusive := func(t *testing.T) (done func()) {
		t.Helper()
		errs := make(chan error, 1)
		go func() {
			_, err := other.ExecContext(ctx, `BEGIN; SET LOCAL lock_timeout = '10s'; LOCK TABLE tgt IN ACCESS EXCLUSIVE MODE; COMMIT`)
			errs <- err
		}()
		for i := 0; ; i++ {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'tgt'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if i == 500 {
				t.Fatal("the ACCESS EXCLUSIVE request never queued")
			}
			time.Sleep(10 * time.Millisecond)
		}
		return func() {
			if err := <-errs; err != nil {
				t.Errorf("the ACCESS EXCLUSIVE request: %v", err)
			}
		}
	}
	begin := func(t *testing.T) *sql.Tx {
		t.Helper()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT 1`); err != nil { // takes the snapshot
			t.Fatal(err)
		}
		return tx
	}

	// The target's probe: it reads tgt only after a pause, by which time
	// the refresh has written tgt and the request queued behind that. It
	// locked tgt first, so it goes on.
	t.Run("target probe locks before the write", func(t *testing.T) {
		tx := begin(t)
		defer tx.Rollback()
		spare := r.spares(ctx)
		defer spare.release()
		a, err := r.aside(ctx, tx, spare, []string{"tgt"}, func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
			if _, err := tx.ExecContext(ctx, `SELECT pg_sleep(0.3)`); err != nil {
				return nil, err
			}
			return count(ctx, tx)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer a.stop()
		a.waitLocks()
		if _, err := tx.ExecContext(ctx, `DELETE FROM tgt WHERE v = 2`); err != nil { // the write
			t.Fatal(err)
		}
		done := queueExclusive(t)
		rows, err := a.result()
		if err != nil || rows[0].n != 2 {
			t.Errorf("probe: %v, %v; want the 2 rows of the snapshot, no lock timeout", rows, err)
		}
		tx.Rollback()
		done()
	})

	// The sources' probe beside the write: the refresh already holds a lock
	// on the source, and the request queued behind it before the probe
	// asked for its own. The probe does not have its lock, so the refresh
	// stops it (at once, not at lock_timeout) and probes on its own
	// connection.
	t.Run("a probe queued behind the refresh is stopped", func(t *testing.T) {
		tx := begin(t)
		defer tx.Rollback()
		if _, err := count(ctx, tx); err != nil { // the refresh reads the source
			t.Fatal(err)
		}
		done := queueExclusive(t)
		spare := r.spares(ctx)
		defer spare.release()
		a, err := r.aside(ctx, tx, spare, []string{"tgt"}, count)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if a.hasLocks() {
			t.Fatal("the probe holds its lock although an ACCESS EXCLUSIVE request was queued before it")
		}
		start := time.Now()
		a.stop()
		if d := time.Since(start); d > time.Second {
			t.Errorf("stopping the queued probe took %s", d)
		}
		if rows, err := count(ctx, tx); err != nil || rows[0].n != 2 {
			t.Errorf("probe on the refresh's connection: %v, %v", rows, err)
		}
		tx.Rollback()
		done()
	})
}

// twoSessions is a test's database, with table holding two rows, a second
// pool of sessions on it (someone else), and a probe counting table's rows.
func twoSessions(t *testing.T, table string) (db, other *sql.DB, count func(context.Context, *sql.Tx) ([]fingerprintRow, error)) {
	t.Helper()
	db, dsn := pgtest.DB(t)
	other, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	pgtest.Exec(t, db, `CREATE TABLE `+table+` (v integer); INSERT INTO `+table+` VALUES (1), (2)`)
	count = func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
		var n int64
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n)
		return []fingerprintRow{{n: n}}, err
	}
	return db, other, count
}

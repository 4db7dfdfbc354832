package run

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// observePartitions reads whether the target (oid) is a partitioned table,
// its partitions' ranges, and whether it has rwc's trigger, into obs. A
// bound holds no column, so pg_get_expr needs no relation to print it:
// given one, it would open and lock every partition (6 ms for 367, in a
// new session).
func observePartitions(ctx context.Context, q queryer, oid uint32, obs *compile.Observation) error {
	obs.PartitionsRead = true
	if oid == 0 {
		return nil
	}
	var names, qualified, bounds []string
	err := q.QueryRowContext(ctx, `SELECT c.relkind = 'p', coalesce(ps.names, '{}'), coalesce(ps.qualified, '{}'), coalesce(ps.bounds, '{}'),
		EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = $2)
		FROM pg_class c LEFT JOIN LATERAL (SELECT array_agg(p.relname ORDER BY p.relname, p.oid) AS names,
				array_agg(quote_ident(n.nspname) || '.' || quote_ident(p.relname) ORDER BY p.relname, p.oid) AS qualified,
				array_agg(pg_get_expr(p.relpartbound, 0) ORDER BY p.relname, p.oid) AS bounds
			FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid JOIN pg_namespace n ON n.oid = p.relnamespace WHERE i.inhparent = c.oid) ps ON true
		WHERE c.oid = $1`, oid, compile.CaptureTrigger).Scan(&obs.Partitioned, pq.Array(&names), pq.Array(&qualified), pq.Array(&bounds), &obs.TargetTriggers)
	if err != nil {
		return err
	}
	def := ""
	for i, name := range names {
		bound := bounds[i]
		if b, ok := parseBound(name, bound); ok {
			b.Qualified = qualified[i]
			obs.Partitions = append(obs.Partitions, b)
		} else {
			if bound == "DEFAULT" {
				def = name
			}
			obs.UnreadBounds = true
		}
	}
	if def == "" {
		return nil
	}
	// Rare, and perhaps in a schema of its own: its name is read apart.
	return q.QueryRowContext(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(p.relname)
		FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid JOIN pg_namespace n ON n.oid = p.relnamespace
		WHERE i.inhparent = $1 AND p.relname = $2 AND pg_get_expr(p.relpartbound, 0) = 'DEFAULT'`, oid, def).Scan(&obs.DefaultPartition)
}

// partitionsNow observes f's target's partitions in tx, as they are now.
func partitionsNow(ctx context.Context, tx *sql.Tx, f *compile.Flow) (compile.Observation, error) {
	var obs compile.Observation
	if !f.Partitioned() {
		return obs, nil
	}
	var oid uint32
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(to_regclass($1)::oid, 0)`, f.Target()).Scan(&oid); err != nil {
		return obs, err
	}
	return obs, observePartitions(ctx, tx, oid, &obs)
}

var rangeBound = regexp.MustCompile(`^FOR VALUES FROM \((?:'(\d{4}-\d{2}-\d{2})'|MINVALUE)\) TO \((?:'(\d{4}-\d{2}-\d{2})'|MAXVALUE)\)$`)

// parseBound reads a date range partition's bound as pg_get_expr prints it
// (DateStyle ISO), MINVALUE and MAXVALUE as the first and last dates rwc
// knows; another (DEFAULT) is left out, and left alone.
func parseBound(name, bound string) (compile.PartitionBound, bool) {
	m := rangeBound.FindStringSubmatch(bound)
	if m == nil {
		return compile.PartitionBound{}, false
	}
	b := compile.PartitionBound{Name: name, From: predicate.MinDate, To: predicate.MaxDate + 1}
	var err error
	if m[1] != "" {
		if b.From, err = predicate.ParseDate(m[1]); err != nil {
			return b, false
		}
	}
	if m[2] != "" {
		if b.To, err = predicate.ParseDate(m[2]); err != nil {
			return b, false
		}
	}
	return b, true
}

// today is the refresh's day in its time zone (compile.Observation.Today).
func (r *Runner) today() predicate.Date {
	return predicate.Resolution{Now: r.opts.Now(), Zone: r.opts.Zone}.Today()
}

// premake creates a partitioned target's missing partitions: those for
// the window and what the refresh writes (Statements.Premake), then those
// its rows after them need (Statements.Overflow), looked up in the catalog
// as it is by then. made says whether it created any.
func premake(ctx context.Context, tx *sql.Tx, f *compile.Flow, stmts compile.Statements) (made bool, err error) {
	if err := execAll(ctx, tx, f, stmts.Premake); err != nil || stmts.Overflow == "" {
		return len(stmts.Premake) > 0, err
	}
	values, err := textValues(ctx, tx, f, stmts.Overflow)
	if err != nil || len(values) == 0 {
		return len(stmts.Premake) > 0, err
	}
	now, err := partitionsNow(ctx, tx, f)
	if err != nil {
		return true, err
	}
	more, err := f.PremakeFor(values, now)
	if err != nil {
		return true, err
	}
	return len(stmts.Premake)+len(more) > 0, execAll(ctx, tx, f, more)
}

// partitionsFirst says that a partitioned target's missing partitions are
// made before the refresh, in a transaction of their own
// (Statements.PartitionsFirst, Runner.premakeAlone). The refresh's
// transaction returns it having changed nothing; the user never sees it.
type partitionsFirst struct{ stmts []string }

func (*partitionsFirst) Error() string { return "the target's partitions are made first" }

// premakeAlone creates partitions and commits them, in attempts that each
// wait at most ddlAttempt for their locks (ATTACH PARTITION queues for
// the DEFAULT partition's ACCESS EXCLUSIVE behind its readers, and its
// readers behind it).
func (r *Runner) premakeAlone(ctx context.Context, conn *sql.Conn, f *compile.Flow, stmts []string) error {
	return r.inAttempts(ctx, func(wait time.Duration) error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d; %s",
			wait.Milliseconds(), r.opts.StatementTimeout.Milliseconds(), session.Reassert)); err != nil {
			return err
		}
		if err := execAll(ctx, tx, f, stmts); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(r.opts.Log, "%s: created the partitions the refresh needs, committed before it: the target has a DEFAULT partition, which ATTACH PARTITION locks until its transaction commits\n", f.Name())
		return nil
	})
}

func execAll(ctx context.Context, tx *sql.Tx, f *compile.Flow, stmts []string) error {
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("flow %s: creating a partition: %w", f.Name(), err)
		}
	}
	return nil
}

// textValues runs a user query (the overflow's) for one text column.
func textValues(ctx context.Context, tx *sql.Tx, f *compile.Flow, q string) ([]string, error) {
	rows, done, err := userRows(ctx, tx, q)
	if err != nil {
		return nil, queryError(f, err)
	}
	defer done()
	var out []string
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		if v.Valid {
			out = append(out, v.String)
		}
	}
	return out, rows.Err()
}

// stage builds the staging tables of the refresh's swaps (created with
// their CHECK, loaded, indexed), before any lock beyond the rows' own, and
// counts the rows the swaps will remove. The rows are inserted by the
// refresh's top-level transaction, as a DELETE+INSERT's are, so that the
// next refresh recognises them as its own (rewrittenKey).
func (r *Runner) stage(ctx context.Context, tx *sql.Tx, f *compile.Flow, stmts compile.Statements, counts map[string]int64, beside bool) (old, inserted int64, err error) {
	if len(stmts.Swaps) == 0 {
		return 0, 0, nil
	}
	counted, err := r.countSwapped(ctx, tx, stmts, beside)
	if err != nil {
		return 0, 0, err
	}
	defer counted.stop()
	for _, sw := range stmts.Swaps {
		if _, err := tx.ExecContext(ctx, sw.Build); err != nil {
			return 0, 0, err
		}
		n, err := insertRows(ctx, tx, f, sw.Load, sw.Counted, counts)
		if err != nil {
			return 0, 0, err
		}
		inserted += n
		if len(sw.Prepare) == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, strings.Join(sw.Prepare, "; ")); err != nil {
			return 0, 0, stageError(f, sw, err)
		}
	}
	old, err = counted.result()
	return old, inserted, err
}

// countSwapped starts counting the rows of the partitions stmts swaps out,
// which the refresh deletes by swapping them: beside the loads, on a
// connection of its own in the refresh's snapshot (asideLazily), when the
// partitions are ones that snapshot shows (beside); else, or when the
// connection could not take its locks in time, in tx once the loads are
// done. It is the first read of the rows the last refresh wrote, which
// sets their hint bits: 9 ms for a 63,000-row window in a scratch
// measurement, 5 ms read again.
func (r *Runner) countSwapped(ctx context.Context, tx *sql.Tx, stmts compile.Statements, beside bool) (*swappedCount, error) {
	here := func() ([]fingerprintRow, error) { return countRows(ctx, tx, stmts.CountSwapped) }
	c := &swappedCount{here: here, release: func() {}}
	if !beside {
		return c, nil
	}
	parts := make([]string, len(stmts.Swaps))
	for i, sw := range stmts.Swaps {
		parts[i] = sw.Partition
	}
	sc := r.spares(ctx)
	a, err := r.asideLazily(ctx, tx, sc, parts, func(ctx context.Context, atx *sql.Tx) ([]fingerprintRow, error) {
		return countRows(ctx, atx, stmts.CountSwapped)
	})
	if err != nil {
		sc.release()
		return nil, err
	}
	c.aside, c.release = a, sc.release
	return c, nil
}

// swappedCount is a count countSwapped started. Its one row's n is the
// count, so that it runs as the probes aside do.
type swappedCount struct {
	aside   *asideProbe // nil: counted here
	here    func() ([]fingerprintRow, error)
	release func()
}

// result is the count: the one aside, once it holds its locks
// (besideOrHere), else counted here.
func (c *swappedCount) result() (int64, error) {
	var rows []fingerprintRow
	var err error
	if c.aside == nil {
		rows, err = c.here()
	} else {
		rows, err = besideOrHere(c.aside, c.here)
	}
	if err != nil {
		return 0, err
	}
	return rows[0].n, nil
}

// stop ends the count aside, should the refresh fail before its result.
func (c *swappedCount) stop() {
	c.aside.stop()
	c.release()
}

func countRows(ctx context.Context, tx *sql.Tx, count string) ([]fingerprintRow, error) {
	var n int64
	err := tx.QueryRowContext(ctx, count).Scan(&n)
	return []fingerprintRow{{n: n}}, err
}

// stageError says which partition's new rows broke a unique key.
func stageError(f *compile.Flow, sw compile.Swap, err error) error {
	if pe, ok := err.(*pq.Error); ok && pe.Code == "23505" {
		return fmt.Errorf("flow %s: the query yields rows that break a unique key of the target (%s) in the partition from %s to %s: %s; the refresh was rolled back and the target is unchanged",
			f.Name(), f.Table.Pos, sw.From, sw.To, pe.Detail)
	}
	return err
}

// swapPartitions exchanges the staged partitions for the old ones, the
// refresh's last statements before it commits: its ACCESS EXCLUSIVE lock on
// the parent, which readers wait for, is held only for the exchange and the
// commit. The lock is tried in short attempts (ddlAttempt) until the lock
// timeout has passed, each in a savepoint: while one attempt waits behind a
// long reader, every reader that comes after queues behind it, so giving up
// soon lets them through. It returns when it got the lock, which the
// commit releases.
func (r *Runner) swapPartitions(ctx context.Context, tx *sql.Tx, f *compile.Flow, stmts compile.Statements) (time.Time, error) {
	if stmts.Lock == "" {
		return time.Time{}, nil
	}
	if err := r.lockInAttempts(ctx, tx, stmts.Lock); err != nil {
		return time.Time{}, err
	}
	// All the exchanges in one round trip: the lock is held for their
	// work, not for as many round trips. Should one fail, the error names
	// its relation, and the whole refresh rolls back.
	locked := time.Now()
	var all []string
	for _, sw := range stmts.Swaps {
		all = append(all, sw.Exchange...)
	}
	if _, err := tx.ExecContext(ctx, strings.Join(all, "; ")); err != nil {
		return locked, fmt.Errorf("flow %s: swapping in %d partitions: %w", f.Name(), len(stmts.Swaps), err)
	}
	return locked, nil
}

// lockInAttempts runs a LOCK statement in attempts of ddlAttempt, ddlPause
// apart, until the lock timeout has passed.
func (r *Runner) lockInAttempts(ctx context.Context, tx *sql.Tx, lock string) error {
	deadline := time.Now().Add(r.opts.LockTimeout)
	for {
		attempt := max(min(ddlAttempt, time.Until(deadline)), time.Millisecond)
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SAVEPOINT rwc_swap; SET LOCAL lock_timeout = %d", attempt.Milliseconds())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, lock)
		if err == nil {
			// Released, the savepoint's lock is the transaction's, and its
			// lock_timeout too: the refresh's comes back.
			_, err = tx.ExecContext(ctx, fmt.Sprintf("RELEASE SAVEPOINT rwc_swap; SET LOCAL lock_timeout = %d", r.opts.LockTimeout.Milliseconds()))
			return err
		}
		if !isLockTimeout(err) || attempt < ddlAttempt {
			return err
		}
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT rwc_swap; RELEASE SAVEPOINT rwc_swap"); rerr != nil {
			return rerr
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(ddlPause):
		}
	}
}

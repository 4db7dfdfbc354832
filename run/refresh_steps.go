package run

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// refreshLocked is one refresh under the flow's lock, on its connection,
// in one transaction: it observes, decides (compile), writes what was
// decided, and stores what the next refresh compares with. It returns a
// *columnsFirst, having changed nothing, when the target's columns must
// change first, and a *partitionsFirst when its partitions must be made
// first.
func (r *Runner) refreshLocked(ctx context.Context, conn *sql.Conn, req Request, res *Result, resolved *predicate.Predicate) error {
	rt := &refreshTx{r: r, f: req.Flow, req: req, res: res, resolved: resolved, c: &capture{}, counts: map[string]int64{}}
	release := func() {}
	if rt.f.CapturesByTriggers() {
		var err error
		if release, err = holdCapture(ctx, conn); err != nil {
			return err
		}
	}
	defer func() { release() }()
	// A refresh that fingerprints probes the target, and sometimes its
	// sources, on connections of their own; not a target Citus distributes,
	// whose probes run in the refresh's transaction (capture).
	var spare *spareConns
	if rt.f.Incremental() && req.Mode != Override && rt.f.Table.Distribution == nil {
		spare = r.spares(ctx)
		defer spare.release()
	}
	var err error
	if err := citusSchemaFirst(ctx, conn, rt.f); err != nil {
		return err
	}
	if rt.tx, err = r.begin(ctx, conn); err != nil {
		return err
	}
	defer rt.tx.Rollback()
	if err := rt.observe(ctx); err != nil {
		return err
	}
	if err := rt.prepare(ctx); err != nil {
		return err
	}
	defer func() { rt.c.stop() }() // the capture's probes, once it started them
	if err := rt.capture(ctx, spare); err != nil {
		return err
	}
	if len(rt.stmts.PartitionsFirst) > 0 {
		// prepare found none to make first: one of them went missing since
		// (someone dropped it).
		return &partitionsFirst{stmts: rt.stmts.PartitionsFirst}
	}
	if err := rt.expectBefore(ctx); err != nil {
		return err
	}
	if err := rt.write(ctx); err != nil {
		return err
	}
	if err := rt.expect(ctx); err != nil {
		return err
	}
	churn, err := rt.store(ctx)
	if err != nil {
		return err
	}
	locked, err := rt.swap(ctx)
	if err != nil {
		return err
	}
	if err := rt.tx.Commit(); err != nil {
		return err
	}
	release()
	release = func() {}
	rt.afterCapture(ctx)
	logResults(r.opts.Log, rt.f.Name(), res.Expectations)
	if !locked.IsZero() {
		// What readers of the target can have waited for: the exchange and
		// the commit (docs/benchmarks.md measures it from a reader's side).
		fmt.Fprintf(r.opts.Log, "%s: swapped %d partition(s) in, holding ACCESS EXCLUSIVE on the target for %s (the exchange and the commit)\n",
			rt.f.Name(), len(rt.stmts.Swaps), time.Since(locked).Round(time.Microsecond))
	}
	r.vacuum(ctx, conn, rt.f, res, churn)
	return nil
}

// refreshTx is one refresh in its transaction: what its steps share.
type refreshTx struct {
	r   *Runner
	f   *compile.Flow
	req Request
	res *Result
	tx  *sql.Tx
	// resolved is the predicate the refresh writes by (the window, or the
	// override's); window the flow's own, which fingerprints describe.
	resolved, window *predicate.Predicate
	obs              compile.Observation
	st               compile.FlowState
	pre, dec         compile.Decision // before the capture, and as it stands
	stmts            compile.Statements
	c                *capture
	counts           map[string]int64 // rows inserted per partition, by an incremental write
	// An override's baseline (see overrideBaseline): whether the target's
	// fingerprints are stored, over which window, and the partitions DML
	// changed before it.
	storeTarget bool
	fpWindow    *predicate.Predicate
	partsAfter  []string // the target's partitions its epoch covers after the refresh (epochsAfter)
	dirtyBefore []string
	ex          *expecting // the expectations' counts before the write
}

// begin starts the refresh's transaction: one snapshot for the whole
// refresh, taken after the lock, so that the fingerprints that decide what
// to recompute and the rows recomputed are the same data.
func (r *Runner) begin(ctx context.Context, conn *sql.Conn) (*sql.Tx, error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	// DateStyle ISO: partition values are read back as text and must parse.
	// The parser's settings: a statement of an earlier refresh on this
	// session may have changed them, and rwc's own SQL is read with them too.
	// jit off: a refresh reads and writes a window, and PostgreSQL's
	// estimate of a window of a large table runs high (63,000 rows of a
	// 32M-row target estimated at 276,000, cost 737,000), past
	// jit_above_cost; compiling the DELETE then took 109 ms of its 194
	// (docs/benchmarks.md), and the cost grew with the history.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL DateStyle = ISO; SET LOCAL jit = off; SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d; %s",
		r.opts.LockTimeout.Milliseconds(), r.opts.StatementTimeout.Milliseconds(), session.Reassert)); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// observe reads what the decision depends on: the query's output types
// against the target's, the flow's state and its guard.
func (rt *refreshTx) observe(ctx context.Context) error {
	f, req := rt.f, rt.req
	var err error
	if rt.obs, err = observe(ctx, rt.tx, f); err != nil {
		return queryError(f, err)
	}
	for _, n := range rt.obs.AfterQueryNotes() {
		fmt.Fprintf(rt.r.opts.Log, "%s: %s\n", f.Name(), n)
	}
	if err := observePartitions(ctx, rt.tx, rt.obs.TargetOID, &rt.obs); err != nil {
		return err
	}
	rt.obs.Today = rt.r.today()
	if rt.st, err = loadFlowState(ctx, rt.tx, f.Name()); err != nil {
		return err
	}
	// The guard: the spec's, or the deployed definition's (read under the
	// flow's lock, in the refresh's snapshot). A window refresh deletes only
	// what its window mirrors, unless the window grew onto history.
	if req.Mode != Window || f.Widens(rt.st, rt.resolved) {
		guards, err := protectedFlows(ctx, rt.tx, &rt.r.guards)
		if err != nil {
			return err
		}
		guards.apply(&rt.st, f.Name())
	}
	// The flow's own window, resolved now: fingerprints always describe it.
	rt.window = rt.resolved
	if req.Mode == Override {
		rt.window, err = f.Predicate.Resolve(predicate.Resolution{Now: rt.r.opts.Now(), Zone: rt.r.opts.Zone})
	}
	return err
}

// prepare decides what the refresh does before it writes, refuses what it
// must refuse, and makes the target ready: created, or its columns changed
// first (columnsFirst), or its partitions made first (partitionsFirst).
func (rt *refreshTx) prepare(ctx context.Context) error {
	f, req, res := rt.f, rt.req, rt.res
	var err error
	if rt.stmts, err = f.Statements(rt.resolved, req.Mode == Full, rt.obs); err != nil {
		return err
	}
	res.PredicateCEL, res.PredicateSQL = rt.stmts.PredicateCEL, rt.stmts.PredicateSQL
	if req.Mode == Full && f.Protected(rt.st) {
		return fullRefusal(f, rt.st)
	}
	rt.dec = f.DecideRefresh(compile.RefreshInput{State: rt.st, Window: rt.window,
		Override: req.Mode == Override, Full: req.Mode == Full, Observed: rt.obs})
	res.Action, res.Reasons = rt.dec.Action, rt.dec.Reasons // a refusal below says what was refused
	if err := adoptable(ctx, rt.tx, f, &rt.st, rt.obs, rt.dec.Columns, rt.r.opts.Log); err != nil {
		return err
	}
	// Before anything is written or altered (column changes commit on
	// their own), and before the capture probes anything.
	if res.RowsLost, err = rt.r.guardLoss(ctx, rt.tx, req, rt.st, rt.stmts, rt.resolved, rt.obs); err != nil {
		return err
	}
	if err := rt.r.ensureTarget(ctx, rt.tx, f, rt.stmts, rt.dec.Columns, rt.obs.TargetOID, rt.obs.Citus); err != nil {
		return err
	}
	first, err := f.PartitionsFirst(rt.resolved, rt.dec, rt.obs)
	if err != nil {
		return err
	}
	if len(first) > 0 {
		return &partitionsFirst{stmts: first}
	}
	if rt.dec.NotIncremental != "" {
		fmt.Fprintf(rt.r.opts.Log, "%s: not incremental: %s\n", f.Name(), rt.dec.NotIncremental)
	}
	if rt.obs.TargetOID == 0 && rt.stmts.Distribute != "" {
		// Created a Citus table: probed as one from now on.
		rt.obs.Distributed = append(rt.obs.Distributed, f.Target())
	}
	for _, c := range f.Table.Columns {
		res.Columns = append(res.Columns, c.Name)
	}
	return nil
}

// capture probes what changed, when the refresh fingerprints, and decides
// what it writes from that (compile.Flow.DecideCapture).
func (rt *refreshTx) capture(ctx context.Context, spare *spareConns) error {
	f, req := rt.f, rt.req
	var err error
	if len(rt.obs.Distributed) > 0 {
		// No snapshot exported here covers a Citus table's shards: the
		// probes run in the refresh's own transaction.
		spare.release()
		spare = nil
	}
	if rt.dec.Capture {
		if rt.c, err = rt.r.startCapture(ctx, rt.tx, f, req, rt.dec, rt.st, rt.window, rt.obs, spare); err != nil {
			rt.c = &capture{}
			return err
		}
	}
	// Every probe that runs aside has its connection by now: one not taken
	// goes back to the pool rather than idle through the write.
	spare.release()
	// An override's writes are rwc's, so afterwards the target's fingerprint
	// is stored again, lest the next refresh take them for external DML;
	// partitions that DML changed since the last refresh, and that the
	// override did not recompute, stay marked as changed, so that the DML
	// still shows then (wherever it is in the window then). Both over the
	// window the state records (the last refresh's), which is what the next
	// refresh compares within: the spec's window now may be narrower
	// (changed since, or moved on).
	rt.storeTarget, rt.fpWindow = true, rt.window
	if rt.dec.Capture && req.Mode == Override {
		if rt.storeTarget, rt.fpWindow, rt.dirtyBefore, err = overrideBaseline(ctx, rt.tx, f, rt.st, rt.obs); err != nil {
			return err
		}
	}
	rt.pre = rt.dec
	if rt.dec, err = rt.c.decide(rt.pre); err != nil {
		return err
	}
	if rt.stmts, err = f.Writes(rt.dec, rt.resolved, req.Mode == Full, rt.obs); err != nil {
		return err
	}
	rt.res.Action, rt.res.Reasons, rt.res.Partitions = rt.dec.Action, rt.dec.Reasons, rt.dec.Partitions
	return nil
}

// write runs what was decided, and decides again when the target's probe
// answers after the write (compile.Await).
func (rt *refreshTx) write(ctx context.Context) error {
	f, res := rt.f, rt.res
	if rt.req.Mode == Full {
		// What it loses for good, in its snapshot; its DELETE (of every
		// row, never a TRUNCATE: see compile.Statements) counts the rest.
		if err := rt.tx.QueryRowContext(ctx, rt.stmts.CountOutside).Scan(&res.RowsOutside); err != nil {
			return err
		}
		fmt.Fprintf(rt.r.opts.Log, "%s: full refresh deletes %d rows outside the window for good\n", f.Name(), res.RowsOutside)
	}
	// The write locks the target: the target's probe must hold its own lock
	// on it first (see aside).
	rt.c.target.waitLocks()
	w, err := rt.r.write(ctx, rt.tx, f, rt.obs, rt.stmts, res.RowsDeleted, rt.counts, false)
	if err != nil {
		return err
	}
	res.RowsDeleted, res.RowsInserted, res.swapped, res.staged, res.madePartitions = w.deleted, w.inserted, w.swapped, w.staged, w.made
	if rt.dec.Await != compile.AwaitNothing {
		if rt.dec, err = rt.r.decideAfterWrite(ctx, rt.tx, rt.c, rt.pre, rt.dec, &rt.stmts, rt.resolved, rt.obs, res); err != nil {
			return err
		}
	}
	// What the swap step will swap in, for the event stored before it.
	for _, sw := range rt.stmts.Swaps {
		res.Swapped = append(res.Swapped, sw.From)
	}
	return nil
}

// afterCapture is a flow capturing by triggers' work once its refresh
// committed: rwc's trigger on the tables that lack it (the target, after
// its first refresh), and the change log's rows no flow needs any more.
// Neither can fail the refresh, which has committed: what could not be
// done is said, and tried again next time.
func (rt *refreshTx) afterCapture(ctx context.Context) {
	if rt.c.epochs == nil {
		return
	}
	if rt.c.epochs.lacksTriggers() {
		for _, note := range installCaptureTriggers(ctx, rt.r.db, rt.f, rt.r.opts.LockTimeout) {
			fmt.Fprintln(rt.r.opts.Log, note)
		}
	}
	if err := collectChangeLog(ctx, rt.r.db); err != nil {
		fmt.Fprintf(rt.r.opts.Log, "%s: clearing rwc.change_log: %s\n", rt.f.Name(), serverWords(err))
	}
}

// swap exchanges a partitioned target's staged partitions for the old
// ones, last before the commit (Runner.swapPartitions). The probes aside
// have ended by now (store waited for them), and with them their locks on
// the target, which the swap's lock would otherwise wait for.
func (rt *refreshTx) swap(ctx context.Context) (time.Time, error) {
	if rt.stmts.Lock == "" {
		return time.Time{}, nil
	}
	rt.c.target.result()
	rt.c.later.result()
	locked, err := rt.r.swapPartitions(ctx, rt.tx, rt.f, rt.stmts)
	if err != nil || !rt.dec.Capture || !rt.storeTarget || rt.c.epochs == nil {
		return locked, err
	}
	// The partitions swapped in are the refresh's own, and so their
	// catalog rows: the target's token as it leaves them (see store).
	return locked, storeEpochs(ctx, rt.tx, rt.f, rt.c.epochs, rt.partsAfter)
}

// epochsAfter stores what the triggers vouch for (storeEpochs), or, when a
// swap follows, names the target's partitions to store it of (those the
// refresh left, premade ones included: a swap keeps their names), which
// swap stores after it, a short statement under its lock. They are those
// observed when the refresh began, unless it created some: the catalog is
// read again only then (a partitions' query of a year's daily partitions
// is about 1.5 ms). A partition someone else attached meanwhile is not in
// the epoch, which the next refresh then finds changed, and probes.
func (rt *refreshTx) epochsAfter(ctx context.Context) error {
	if rt.f.Partitioned() {
		obs := rt.obs
		if rt.res.madePartitions {
			var err error
			if obs, err = partitionsNow(ctx, rt.tx, rt.f); err != nil {
				return err
			}
		}
		rt.partsAfter = rt.f.WindowPartitions(rt.window, obs)
	}
	if rt.stmts.Lock != "" {
		return nil
	}
	return storeEpochs(ctx, rt.tx, rt.f, rt.c.epochs, rt.partsAfter)
}

// store records the refresh for the next one: the fingerprints, the flow's
// definition and window, the dead rows it left, the event, and what the
// caller records with it (a backfill's ledger).
func (rt *refreshTx) store(ctx context.Context) (churn, error) {
	f, req, res := rt.f, rt.req, rt.res
	windowRows := res.RowsInserted
	if rt.dec.Capture && rt.storeTarget {
		var err error
		if windowRows, err = storeCapture(ctx, rt.tx, rt.c, rt.dec, req.Mode == Override, rt.fpWindow, rt.resolved, rt.dirtyBefore, res.RowsInserted, rt.counts); err != nil {
			return churn{}, err
		}
	}
	// Before the epochs: it may change the target's catalog row.
	c, err := trackChurn(ctx, rt.tx, f, res, windowRows, req.Mode != Override)
	if err != nil {
		return churn{}, err
	}
	// A swap changes the target's catalog rows: what its triggers vouch
	// for is stored after it (swap).
	if rt.dec.Capture && rt.storeTarget && rt.c.epochs != nil {
		if err := rt.epochsAfter(ctx); err != nil {
			return churn{}, err
		}
	}
	if rt.c.epochs != nil {
		res.Capture = rt.c.summary()
	}
	if req.Mode != Override {
		// An override does not change the flow: its window, and the window
		// the next refresh compares with, stay the flow's own.
		if _, err := rt.tx.ExecContext(ctx, `UPDATE rwc.flows SET columns = $2, query_fingerprint = $3, predicate_cel = $4,
			predicate_sql = $5, env_version = $6, determinism = $7, last_refresh_at = $8 WHERE flow = $1`,
			f.Name(), f.ColumnsJSON(), f.Fingerprint(), rt.window.Root.CEL(), res.PredicateSQL, rt.resolved.Version,
			f.Predicate.Determinism.String(), res.StartedAt); err != nil {
			return churn{}, err
		}
		if f.Immediate() {
			if err := installMaintenance(ctx, rt.tx, f, rt.resolved, rt.obs); err != nil {
				return churn{}, err
			}
		}
	} else if f.Immediate() {
		// A writer in REPEATABLE READ learns of this refresh from the
		// row's new version (compile/immediate.go).
		if _, err := rt.tx.ExecContext(ctx, `UPDATE rwc.flows SET flow = flow WHERE flow = $1`, f.Name()); err != nil {
			return churn{}, err
		}
	}
	if err := insertEvent(ctx, rt.tx, eventKindPlanningInformation, res, time.Since(res.StartedAt), ""); err != nil {
		return churn{}, err
	}
	if req.Record != nil {
		err = req.Record(ctx, rt.tx, res)
	}
	return c, err
}

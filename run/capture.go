package run

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// capture is one refresh's view of what changed: the fingerprints the last
// refresh stored, and this refresh's probes of the target and the sources,
// some of them running on a second connection (aside).
type capture struct {
	f       *compile.Flow
	window  *predicate.Predicate // the flow's own, resolved
	stored  prints
	target  *asideProbe      // the target's probe (nil: not probed)
	sources []fingerprintRow // the sources' fingerprints taken so far
	parted  []compile.Probe  // the sources fingerprinted per partition...
	later   *asideProbe      // ...when they are probed beside the write
	forced  compile.Reason   // why the whole sources force the whole window (wholeReason)
	// epochs: what the triggers of a flow capturing by them vouch for;
	// skipped: they vouch that nothing changed, and nothing was probed;
	// vouching: the stored fingerprints cover the window now, so a table
	// whose trigger vouches stands in for its probe (see probe).
	epochs   epochs
	obs      compile.Observation
	parts    []string // the target's partitions its epoch covers (compile.Flow.WindowPartitions)
	skipped  bool
	vouching bool
	// targetVouched: the whole window is recomputed and the target's
	// trigger vouches that no one but rwc wrote it: it was not probed.
	targetVouched bool
	mu            sync.Mutex
	how           map[string]string // table → how its fingerprints were taken, for the summary
	logged        []string          // partition values the triggers logged, recomputed before their probe answers
	// dirtRecomputed: the target's partitions written since the last
	// refresh, recomputed with the changed ones (recomputeWritten)
	dirtRecomputed []string
	pending        []pendingProbe // the probes of those values
	r              *Runner
	spare          *spareConns
}

// startCapture starts the probes of a refresh of f that fingerprints. A
// refresh that may be incremental compares the target with what the last
// one left; that probe runs beside the sources' probes. Of the sources,
// those fingerprinted whole (dimensions) come first: when one of them
// forces the whole window, or the state already did, the others are needed
// only to be stored, and a second connection takes them while this one
// writes. The caller stops what is still running (stop).
func (r *Runner) startCapture(ctx context.Context, tx *sql.Tx, f *compile.Flow, req Request, dec compile.Decision, st compile.FlowState, window *predicate.Predicate, obs compile.Observation, spare *spareConns) (*capture, error) {
	c := &capture{f: f, window: window, r: r, spare: spare, obs: obs, parts: f.WindowPartitions(window, obs)}
	if err := c.start(ctx, tx, req, dec, st); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *capture) start(ctx context.Context, tx *sql.Tx, req Request, dec compile.Decision, st compile.FlowState) error {
	f, window := c.f, c.window
	var err error
	if f.CapturesByTriggers() && req.Mode == Window {
		if c.epochs, err = readEpochs(ctx, tx, f, c.parts); err != nil {
			return err
		}
	}
	if req.Mode == Window && dec.Action == compile.ActionIncremental {
		if c.stored, err = loadFingerprints(ctx, tx, f.Name()); err != nil {
			return err
		}
		// The stored fingerprints are the tables' own still: the window
		// they cover is the window now, and nothing changed since.
		c.vouching = c.stored.taken && c.epochs != nil && st.PredicateCEL == window.Root.CEL()
		if c.vouching && c.epochs.unchanged() {
			c.skipped = true
			return nil
		}
		// With triggers, the target's probe waits for the dimensions': when
		// they force the whole window, a target whose trigger vouches for
		// it needs none.
		if c.stored.taken && !c.vouching {
			if err := c.startTarget(ctx, tx, st); err != nil {
				return err
			}
		}
	}
	if req.Mode == Override {
		return nil
	}
	probes, err := f.Probes(window, c.obs)
	if err != nil {
		return err
	}
	var whole []compile.Probe
	for _, p := range probes {
		if p.Whole {
			whole = append(whole, p)
		} else {
			c.parted = append(c.parted, p)
		}
	}
	if c.sources, err = c.probe(ctx, tx, whole, false); err != nil {
		return queryError(f, err)
	}
	if dec.Action == compile.ActionIncremental {
		c.forced = wholeReason(c.sources, c.stored)
	}
	if c.vouching {
		if err := c.startTarget(ctx, tx, st); err != nil {
			return err
		}
	}
	if len(c.parted) == 0 {
		return nil
	}
	// Needed before the write, or cheap to have now: their triggers stand
	// in for their probes (a second connection would cost more).
	if dec.Action == compile.ActionIncremental && (c.forced == "" || c.unprobed(c.parted)) {
		rows, err := c.probe(ctx, tx, c.parted, false)
		if err != nil {
			return queryError(f, err)
		}
		c.sources = append(c.sources, rows...)
		c.parted = nil
		return nil
	}
	tables := make([]string, len(c.parted))
	for i, p := range c.parted {
		tables[i] = p.Table
	}
	parted := c.parted
	c.later, err = c.r.aside(ctx, tx, c.spare, tables, func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
		return c.probe(ctx, tx, parted, true)
	})
	return err
}

// startTarget starts the target's probe beside the write, or, when its
// trigger vouches that no one but rwc wrote it since the last refresh,
// takes its fingerprints from those stored (probing only the partitions
// that refresh rewrote, which are stored as counts of its rows).
func (c *capture) startTarget(ctx context.Context, tx *sql.Tx, st compile.FlowState) error {
	f, window, stored := c.f, c.window, c.stored
	prior, _ := f.StoredWindow(st)
	probe := func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
		return probeTarget(ctx, tx, f, window, stored, prior, c.obs)
	}
	locks := f.ProbeLocks(c.obs, window, prior)
	if e, ok := c.epochs.of(f.Target()); ok && c.vouching && e.Trusted && !e.Changed {
		if c.forced != "" {
			// The whole window is recomputed, and nothing of the target's
			// before is stored (targetAfter): its probe would only name
			// the reason, and its trigger says that it is clean.
			c.noteHow(f.Target(), "vouched", nil)
			c.targetVouched = true
			return nil
		}
		if rows, rewritten, region, ok := stored.vouchedTarget(f, window); ok {
			if region != nil && c.recomputesAll(rewritten) {
				// This refresh rewrites them again, so what they hold
				// matters to nothing it stores (targetAfter), and the
				// trigger vouches that they hold the last one's rows.
				rows, region = append(rows, stored.countedRows(rewritten)...), nil
			}
			if region == nil {
				c.noteHow(f.Target(), "vouched", nil)
				c.target = readyProbe(rows)
				return nil
			}
			c.noteHow(f.Target(), fmt.Sprintf("vouched, but for the %d partition(s) the last refresh rewrote, probed beside the write", len(rewritten)), nil)
			locks = f.ProbeLocks(c.obs, region)
			probe = func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
				tp, err := f.TargetProbe([]*predicate.Predicate{region}, uint32(stored.rewrite.writer), c.obs)
				if err != nil {
					return nil, err
				}
				probed, err := runProbe(ctx, tx, tp)
				return append(rows, probed...), err
			}
		}
	}
	var err error
	c.target, err = c.r.aside(ctx, tx, c.spare, locks, probe)
	return err
}

// probe takes the fingerprints of the sources probes fingerprint, but for
// a source whose trigger vouches that it did not change, whose stored ones
// stand in, and one whose trigger logged the partition values that
// changed: those values are recomputed (logged) without waiting for their
// probe, which runs beside the write (direct: here, in tx) and is merged
// with the stored fingerprints of the others when the refresh stores
// them (allSources). The window is the one the fingerprints were stored
// for, so that is what a probe of it all would find. Each source is a
// table (or a tree of them): incrementalBlocker ruled out views and
// foreign tables, whose rows have no identity to fingerprint.
func (c *capture) probe(ctx context.Context, tx *sql.Tx, probes []compile.Probe, direct bool) ([]fingerprintRow, error) {
	var out []fingerprintRow
	for _, p := range probes {
		rows, err := c.probeOne(ctx, tx, p, direct)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

func (c *capture) probeOne(ctx context.Context, tx *sql.Tx, p compile.Probe, direct bool) ([]fingerprintRow, error) {
	e, ok := c.epochs.of(p.Table)
	if !ok || !c.vouching || !e.Trusted {
		return runProbe(ctx, tx, p)
	}
	stored := c.stored.sourceRows(p.Source, p.Whole)
	if !e.Changed {
		c.noteHow(p.Table, "vouched", nil)
		return stored, nil
	}
	np, narrowed, ok := c.loggedProbe(p, e)
	if !ok {
		return runProbe(ctx, tx, p) // a value the window's type cannot read: probe it all
	}
	c.noteHow(p.Table, fmt.Sprintf("%d partition(s) logged, recomputed, probed beside the write", len(e.values)), e.values)
	out := stored[:0:0]
	for _, r := range stored {
		if !rewrote(c.f, narrowed, r.value) {
			out = append(out, r)
		}
	}
	if direct {
		probed, err := runProbe(ctx, tx, np)
		return append(out, probed...), err
	}
	a, err := c.r.asideLazily(ctx, tx, c.spare, []string{p.Table}, func(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
		return runProbe(ctx, tx, np)
	})
	if err != nil {
		return nil, err
	}
	c.pending = append(c.pending, pendingProbe{a, np})
	return out, nil
}

// loggedProbe is p's probe narrowed to the partition values e, a source's
// trigger, logged, and that narrowed window, when p can be probed so (see
// probeOne): they are all that changed, and the refresh recomputes them
// whatever their probe finds.
func (c *capture) loggedProbe(p compile.Probe, e TableCapture) (compile.Probe, *predicate.Predicate, bool) {
	if p.Whole || !e.valuesKnown || len(e.values) == 0 {
		return compile.Probe{}, nil, false
	}
	narrowed, err := c.f.Narrow(c.window, e.values)
	if err != nil {
		return compile.Probe{}, nil, false
	}
	np, err := c.f.ProbeOf(p, narrowed)
	return np, narrowed, err == nil
}

// recomputesAll reports whether the refresh recomputes every one of values
// whatever its probes find: each is in the window and logged by the
// trigger of a source fingerprinted per partition that vouches, as
// probeOne then finds them (loggedProbe).
func (c *capture) recomputesAll(values []string) bool {
	inWindow := inWindowOf(c.f, c.window)
	logged := map[string]bool{}
	for _, p := range c.parted {
		e, ok := c.epochs.of(p.Table)
		if _, _, logs := c.loggedProbe(p, e); ok && e.Trusted && e.Changed && logs {
			for _, v := range e.values {
				logged[v] = true
			}
		}
	}
	for _, v := range values {
		if !logged[v] || !inWindow(v) {
			return false
		}
	}
	return true
}

// unprobed reports whether none of probes needs probing before the write:
// each source's triggers vouch for it, or logged the values that changed
// (see probeOne).
func (c *capture) unprobed(probes []compile.Probe) bool {
	if !c.vouching {
		return false
	}
	for _, p := range probes {
		e, ok := c.epochs.of(p.Table)
		if !ok || !e.Trusted || e.Changed && (!e.valuesKnown || len(e.values) == 0) {
			return false
		}
	}
	return true
}

// pendingProbe is a probe of the partitions a source's triggers logged,
// running beside the write.
type pendingProbe struct {
	aside *asideProbe
	probe compile.Probe
}

// summary is what the capture found and did, for the event and the log.
func (c *capture) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs.summary(c.skipped, c.how)
}

// noteHow records how a table's fingerprints were taken, and the values
// its triggers logged that are to be recomputed. The sources' probes may
// run aside: the summary reads it after they ended.
func (c *capture) noteHow(table, how string, logged []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.how == nil {
		c.how = map[string]string{}
	}
	c.how[table] = how
	c.logged = append(c.logged, logged...)
}

// stop cancels the probes still running aside, and waits for them.
func (c *capture) stop() {
	c.target.stop()
	c.later.stop()
	for _, p := range c.pending {
		p.aside.stop()
	}
}

// allSources returns the sources' fingerprints, with those taken beside the
// write. A probe aside that has not got its locks by now may be queued
// behind someone who waits for this transaction (see aside): the sources
// are as they were, so this connection probes them instead.
func (c *capture) allSources(ctx context.Context, tx *sql.Tx) ([]fingerprintRow, error) {
	out := c.sources
	for _, p := range c.pending {
		rows, err := besideOrHere(p.aside, func() ([]fingerprintRow, error) { return runProbe(ctx, tx, p.probe) })
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	if c.later == nil {
		return out, nil
	}
	later, err := besideOrHere(c.later, func() ([]fingerprintRow, error) { return c.probe(ctx, tx, c.parted, true) })
	if err != nil {
		return nil, err
	}
	return append(out, later...), nil
}

// besideOrHere is the answer of a probe aside, or, when it has not got its
// locks, of the same probe on this connection (see allSources).
func besideOrHere(a *asideProbe, here func() ([]fingerprintRow, error)) ([]fingerprintRow, error) {
	if a.hasLocks() {
		return a.result()
	}
	a.stop()
	return here()
}

// decide is the capture's part of the decision (compile.DecideCapture),
// with the target's probe still running beside the write, unless the
// decision cannot be made without its answer.
func (c *capture) decide(pre compile.Decision) (compile.Decision, error) {
	if pre.Action != compile.ActionIncremental {
		return pre, nil
	}
	if c.skipped {
		return c.f.DecideCapture(pre, c.window, c.found(compile.TargetClean)), nil
	}
	check := compile.TargetNotProbed
	switch {
	case c.targetVouched:
		check = compile.TargetClean
	case c.target != nil:
		check = compile.TargetPending
	}
	d := c.f.DecideCapture(pre, c.window, c.found(check))
	if d.Await == compile.AwaitBeforeWrite {
		return c.decideKnown(pre)
	}
	return d, nil
}

// decideKnown decides with the target's probe's answer, waiting for it.
func (c *capture) decideKnown(pre compile.Decision) (compile.Decision, error) {
	check, err := c.targetCheck()
	if err != nil {
		return pre, err
	}
	return c.f.DecideCapture(pre, c.window, c.found(check)), nil
}

// found is what the capture found changed, compared with what the last
// refresh stored. Which source partitions changed matters only when no
// source forces the whole window, and they were all probed then.
func (c *capture) found(target compile.TargetCheck) compile.Captured {
	if c.skipped {
		// The triggers vouch that nothing changed: nothing was probed.
		return compile.Captured{Target: compile.TargetClean}
	}
	got := compile.Captured{Forced: c.forced, Target: target}
	if c.forced == "" {
		got.Changed = changedValues(c.f, c.window, c.sources, c.stored)
		inWindow := inWindowOf(c.f, c.window)
		for _, v := range c.logged {
			if inWindow(v) {
				got.Changed = append(got.Changed, v)
			}
		}
		got.Changed = append(got.Changed, c.dirtRecomputed...)
		slices.Sort(got.Changed)
		got.Changed = slices.Compact(got.Changed)
	}
	return got
}

// targetCheck waits for the target's probe and says whether the window is
// as the last refresh left it.
func (c *capture) targetCheck() (compile.TargetCheck, error) {
	switch {
	case c.targetVouched:
		return compile.TargetClean, nil
	case c.target == nil:
		return compile.TargetNotProbed, nil
	}
	rows, err := c.target.result()
	switch {
	case err != nil:
		return 0, err
	case targetClean(c.f, c.window, rows, c.stored), c.f.Immediate() && c.recomputeWritten(rows):
		return compile.TargetClean, nil
	}
	return compile.TargetChanged, nil
}

// recomputeWritten: the target of a flow with maintain: immediate changed
// in partitions the refresh can name, which it then recomputes with those
// whose source rows changed (dirtRecomputed; all of them when the sources
// force the whole window). Its triggers write the target in every
// writer's transaction, a write that changed no source row's content (an
// upsert of the same values) included, so a partition changed by someone
// else cannot be told from one they kept; recomputed, either is as the
// query has it. A target whose change cannot be placed (the last refresh
// counted a whole window's rows) has its window recomputed.
func (c *capture) recomputeWritten(target []fingerprintRow) bool {
	dirty, unknown := targetDirt(c.f, c.window, target, c.stored)
	if !unknown {
		c.dirtRecomputed = dirty
	}
	return !unknown
}

// targetBefore is the target's fingerprints before the write, within the
// window (see inWindowOnly).
func (c *capture) targetBefore() ([]fingerprintRow, error) {
	rows, err := c.target.result()
	rows = slices.Clone(inWindowOnly(rows))
	for i, r := range rows {
		if r.counted {
			rows[i] = fingerprintRow{value: r.value, n: changedPartition}
		}
	}
	return rows, err
}

// FindChanges is, read-only and without locking anything, what a refresh of
// f's window would find changed now (see startCapture): rwc plan and rwc
// refresh --explain show the statements the refresh decides from it.
func FindChanges(ctx context.Context, db *sql.DB, f *compile.Flow, window *predicate.Predicate, timeout time.Duration) (compile.Captured, error) {
	tx, err := readOnly(ctx, db, timeout)
	if err != nil {
		return compile.Captured{}, err
	}
	defer tx.Rollback()
	st, err := loadFlowState(ctx, readOnlyTx{tx}, f.Name())
	if err != nil {
		return compile.Captured{}, err
	}
	obs, err := captureObservation(ctx, tx, f)
	if err != nil {
		return compile.Captured{}, err
	}
	// No spare connections: every probe runs here, in turn.
	c, err := (&Runner{db: db}).startCapture(ctx, tx, f, Request{Flow: f, Mode: Window},
		compile.Decision{Action: compile.ActionIncremental}, st, window, obs, nil)
	if err != nil {
		return compile.Captured{}, err
	}
	defer c.stop()
	check, err := c.targetCheck()
	if err != nil {
		return compile.Captured{}, queryError(f, err)
	}
	return c.found(check), nil
}

// readOnlyTx reads in a read-only transaction: loadFlowState locks no row.
type readOnlyTx struct{ tx *sql.Tx }

func (r readOnlyTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.tx.QueryRowContext(ctx, q, args...)
}

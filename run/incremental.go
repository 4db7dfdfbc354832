package run

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sort"
	"strconv"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// lockFlow takes the flow's advisory lock on a connection of its own,
// before the refresh's transaction starts, so that the transaction's
// snapshot is taken after any earlier refresh of the flow committed. The
// lock is a session lock: a killed rwc's connection ends and releases it.
func (r *Runner) lockFlow(ctx context.Context, f *compile.Flow) (*sql.Conn, func(), error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		// DISCARD ALL drops the lock and whatever the refresh left in the
		// session (settings, prepared statements), so the connection can go
		// back to the pool; if it fails, the connection is dropped instead,
		// which ends the session and its lock.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `DISCARD ALL`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET lock_timeout = %d; %s", r.opts.LockTimeout.Milliseconds(), nameFlowSession(f.Name()))); err != nil {
		release()
		return nil, nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, advisoryNamespace+f.Name()); err != nil {
		release()
		return nil, nil, r.flowBusy(ctx, f.Name(), "nothing was changed", err)
	}
	return conn, release, nil
}

// nameFlowSession names the session that takes a flow's lock after the
// flow, before it waits, so that pg_stat_activity tells which flow a
// session holds or waits for; a name the connection string gave is left
// alone. DISCARD ALL, on release, puts back the name the session started
// with.
func nameFlowSession(flow string) string {
	return fmt.Sprintf("SELECT set_config('application_name', %s, false) WHERE current_setting('application_name') = %s",
		pq.QuoteLiteral(session.FlowApplicationName(flow)), pq.QuoteLiteral(session.ApplicationName))
}

// fingerprintRow is one probe's answer for one partition value.
type fingerprintRow struct {
	source string
	whole  bool
	value  string
	n, h   int64
	// byWriter and inWindow (target probes only): the rows inserted by the
	// transaction of the last refresh's rewrite (see rewrittenKey), and
	// whether the partition lies in the window now, as PostgreSQL decides.
	byWriter int64
	inWindow bool
	// counted: a target partition's rows counted, not fingerprinted
	// (countedRows); stored, it says changed (changedPartition).
	counted bool
}

// takenKey marks, in rwc.fingerprints, that a refresh stored the flow's
// fingerprints: an empty window has no other row, and must not read as
// "never fingerprinted". (No probe yields it: the target is never whole.)
var takenKey = fpKey{source: "", whole: true, value: ""}

// rewrittenKey marks a target that the last refresh rewrote, in whole or
// in part: instead of fingerprinting the rows it had just inserted (a scan
// on the refresh's critical path), it stored how many it inserted (n) and
// the transaction that did (h); the partitions it rewrote are stored with
// n = rewrittenCounted and h the rows it inserted there (none: it rewrote
// the whole window). The next refresh checks that every row in those
// partitions is that transaction's and none is missing (targetDirt), and
// stores fingerprints for them.
var rewrittenKey = fpKey{source: "", whole: true, value: "rewritten"}

// rewrittenCounted is the stored n of a partition the last refresh
// rewrote; h is the number of rows it inserted there. (-1, a partition
// listed without a count, was state version 4's: migration 5 clears it.)
const rewrittenCounted = -3

type fpKey struct {
	source string
	whole  bool
	value  string
}

// prints is what rwc.fingerprints holds for a flow, decoded in one place
// (loadFingerprints): its marks as fields, the partitions as a map. The
// table keeps the marks as rows of their own (takenKey, rewrittenKey) and
// a target partition's state in its n (rewrittenCounted, changedPartition).
type prints struct {
	taken   bool         // a refresh stored fingerprints (takenKey)
	rewrite *rewriteMark // the last refresh's rewrite (rewrittenKey); nil: none, or expired
	// parts are each source's and the target's partitions: (n, h).
	parts map[fpKey][2]int64
}

// rewriteMark is what the last refresh stored of its own write instead of
// fingerprinting it: the rows it inserted, and its transaction.
type rewriteMark struct{ inserted, writer int64 }

// rewritten reports whether the last refresh rewrote target partition v,
// and the rows it inserted there.
func (p prints) rewritten(v string) (int64, bool) {
	fp, ok := p.parts[fpKey{"", false, v}]
	return fp[1], p.rewrite != nil && ok && fp[0] == rewrittenCounted
}

// sourceRows is what a probe of source found when these were stored.
func (p prints) sourceRows(source string, whole bool) []fingerprintRow {
	var out []fingerprintRow
	for k, v := range p.parts {
		if k.source == source && k.whole == whole && source != "" {
			out = append(out, fingerprintRow{source: source, whole: whole, value: k.value, n: v[0], h: v[1]})
		}
	}
	return out
}

// vouchedTarget is what the target's probe over window (the window they
// were stored for) finds when no one but rwc wrote it since: the stored
// fingerprints, but for the partitions the last refresh rewrote, which
// are stored as counts of its rows and still need the probe (region, nil:
// none) that recognises them. ok is false when a probe of the whole window
// is needed all the same: the last refresh rewrote the whole window, or a
// partition is stored as changed (changedPartition), or its mark expired.
func (p prints) vouchedTarget(f *compile.Flow, window *predicate.Predicate) (rows []fingerprintRow, rewritten []string, region *predicate.Predicate, ok bool) {
	for k, v := range p.parts {
		switch {
		case k.source != "" || k.whole:
		case v[0] == rewrittenCounted && p.rewrite != nil:
			rewritten = append(rewritten, k.value)
		case v[0] < 0:
			return nil, nil, nil, false
		default:
			rows = append(rows, fingerprintRow{value: k.value, n: v[0], h: v[1], inWindow: true})
		}
	}
	if p.rewrite != nil && len(rewritten) == 0 {
		return nil, nil, nil, false
	}
	if len(rewritten) == 0 {
		return rows, nil, nil, true
	}
	sort.Strings(rewritten)
	region, err := f.Narrow(window, rewritten)
	return rows, rewritten, region, err == nil
}

// countedRows is what a probe would find of the partitions the last
// refresh rewrote (values) when no one but rwc wrote them since: its rows,
// as many as it inserted. Their fingerprints were not taken (counted).
func (p prints) countedRows(values []string) []fingerprintRow {
	var out []fingerprintRow
	for _, v := range values {
		n, _ := p.rewritten(v)
		out = append(out, fingerprintRow{value: v, n: n, byWriter: n, inWindow: true, counted: true})
	}
	return out
}

// targetRows is the rows the stored fingerprints count in the target
// (a rewrite's mark counts the rows inserted).
func (p prints) targetRows() int64 {
	var n int64
	for k, v := range p.parts {
		if k.source == "" && !k.whole {
			n += max(v[0], 0)
		}
	}
	if p.rewrite != nil {
		n += p.rewrite.inserted
	}
	return n
}

func runProbe(ctx context.Context, tx *sql.Tx, p compile.Probe) ([]fingerprintRow, error) {
	rows, err := tx.QueryContext(ctx, p.SQL)
	if err != nil {
		return nil, fmt.Errorf("fingerprint of %s: %w", p.Source, err) // queryError positions it
	}
	defer rows.Close()
	var out []fingerprintRow
	for rows.Next() {
		fr := fingerprintRow{source: p.Source, whole: p.Whole}
		var v sql.NullString
		dest := []any{&v, &fr.n, &fr.h}
		if p.Source == "" {
			dest = append(dest, &fr.byWriter, &fr.inWindow)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		fr.value = v.String
		out = append(out, fr)
	}
	return out, rows.Err()
}

// wholeReason is why the sources fingerprinted whole (dimensions) force a
// whole-window recompute, or "": no fingerprints stored, or a changed
// source. The partitioned sources do not matter then, so the refresh can
// decide before it has probed them.
func wholeReason(sources []fingerprintRow, stored prints) compile.Reason {
	if !stored.taken {
		// Refreshed before rwc kept fingerprints: what changed is unknown.
		return compile.ReasonPriorPredicateMissing
	}
	bySource := map[string][]fingerprintRow{}
	for _, s := range sources {
		if s.whole {
			bySource[s.source] = append(bySource[s.source], s)
		}
	}
	for src, rows := range bySource {
		if diffValues(rows, stored.parts, src, func(string) bool { return true }) != nil {
			// A source joined on another key changed (a dimension): which
			// partitions it affects is not known.
			return compile.ReasonCannotPushPredicate
		}
	}
	return ""
}

func loadFingerprints(ctx context.Context, tx *sql.Tx, flow string) (prints, error) {
	// next: the transaction id the snapshot would give next, read with the
	// rows (one round trip) for the mark's expiry below.
	rows, err := tx.QueryContext(ctx, `SELECT source, whole, value, n, h, pg_snapshot_xmax(pg_current_snapshot())::text::bigint
		FROM rwc.fingerprints WHERE flow = $1`, flow)
	if err != nil {
		return prints{}, err
	}
	defer rows.Close()
	out := prints{parts: map[fpKey][2]int64{}}
	var next int64
	for rows.Next() {
		var k fpKey
		var n, h int64
		if err := rows.Scan(&k.source, &k.whole, &k.value, &n, &h, &next); err != nil {
			return prints{}, err
		}
		switch k {
		case takenKey:
			out.taken = true
		case rewrittenKey:
			out.rewrite = &rewriteMark{inserted: n, writer: h}
		default:
			out.parts[k] = [2]int64{n, h}
		}
	}
	if err := rows.Err(); err != nil {
		return prints{}, err
	}
	// An xmin is the low 32 bits of a transaction id: once 2^31 more ids
	// were handed out, another transaction may carry the rewriting one's
	// xmin, and its rows would pass for rwc's. The mark is dropped then,
	// and the partitions it stood for read as changed: a needless
	// recompute, never a missed change.
	if out.rewrite != nil && next-out.rewrite.writer >= 1<<31 {
		out.rewrite = nil
	}
	return out, nil
}

// inWindowOf reports whether a partition value (as PostgreSQL prints it)
// lies in the window.
func inWindowOf(f *compile.Flow, window *predicate.Predicate) func(string) bool {
	return func(v string) bool {
		val, ok := parsePartition(f, v)
		if !ok {
			return true // cannot tell: treat as changed, never miss one
		}
		in, err := window.Eval(map[string]predicate.Value{f.PartitionBy: val}, predicate.Resolution{})
		return err != nil || in
	}
}

// probeTarget fingerprints the target's window: its rows as they are now,
// in this transaction. When the last refresh rewrote partitions of the
// window the state records (prior), the probe also covers them, however
// the window moved since, and counts that refresh's rows.
func probeTarget(ctx context.Context, tx *sql.Tx, f *compile.Flow, window *predicate.Predicate, stored prints, prior *predicate.Predicate, obs compile.Observation) ([]fingerprintRow, error) {
	windows, writer := []*predicate.Predicate{window}, uint32(0)
	if stored.rewrite != nil && !f.TargetDistributed(obs) {
		writer = uint32(stored.rewrite.writer)
		if prior != nil {
			region := prior
			if values := rewrittenValues(stored); values != nil {
				var err error
				if region, err = f.Narrow(prior, values); err != nil {
					return nil, err
				}
			}
			if region != window {
				windows = append(windows, region)
			}
		}
	}
	tp, err := f.TargetProbe(windows, writer, obs)
	if err != nil {
		return nil, err
	}
	return runProbe(ctx, tx, tp)
}

// rewrittenValues lists the partitions the last refresh rewrote; nil: the
// whole window (or none).
func rewrittenValues(stored prints) []string {
	var out []string
	for k, v := range stored.parts {
		if k.source == "" && !k.whole && v[0] == rewrittenCounted {
			out = append(out, k.value)
		}
	}
	sort.Strings(out)
	return out
}

// targetDirt lists the partition values of window that DML by anyone else
// changed since the last refresh, from the target's probe over window (with
// the stored rewrite's partitions, see probeTarget): a partition the last
// refresh rewrote must hold only its transaction's rows, as many as it
// inserted there; any other its stored fingerprint. After a rewrite of the
// whole window, whose partitions are not listed, the rows are counted as a
// whole: when some are missing, which partition lost them is not known, so
// every partition in window counts as changed, and unknown is true. A
// needless recompute, never a missed change.
func targetDirt(f *compile.Flow, window *predicate.Predicate, target []fingerprintRow, stored prints) (dirty []string, unknown bool) {
	inWindow := inWindowOf(f, window)
	whole := stored.rewrite != nil && rewrittenValues(stored) == nil
	counted := stored.rewritten
	var mine int64 // the whole window's rewrite's rows found
	seen := map[string]bool{}
	for _, t := range target {
		seen[t.value] = true
		mine += t.byWriter
		n, isCounted := counted(t.value)
		switch {
		case !t.inWindow:
		case whole || isCounted:
			if t.n != t.byWriter || isCounted && t.byWriter != n {
				dirty = append(dirty, t.value)
			}
		case stored.parts[fpKey{"", false, t.value}] != [2]int64{t.n, t.h}:
			dirty = append(dirty, t.value)
		}
	}
	for k := range stored.parts {
		if k.source != "" || k.whole || seen[k.value] || !inWindow(k.value) {
			continue
		}
		if n, isCounted := counted(k.value); !isCounted || n > 0 {
			dirty = append(dirty, k.value) // emptied
		}
	}
	lost := whole && mine != stored.rewrite.inserted
	if lost {
		for _, t := range target {
			if t.inWindow {
				dirty = append(dirty, t.value)
			}
		}
	}
	return dirty, lost
}

// keepDirt is what an override stores for the target: its fingerprints
// after the write (target), except for the partitions that DML changed
// before it (dirty) and that it did not recompute (outside where), which
// are stored as changed (changedPartition), to show at the next refresh.
func keepDirt(f *compile.Flow, where *predicate.Predicate, target []fingerprintRow, dirty []string) []fingerprintRow {
	keep := map[string]bool{}
	for _, v := range dirty {
		if !rewrote(f, where, v) {
			keep[v] = true
		}
	}
	out := target[:0:0]
	for _, t := range target {
		if !keep[t.value] {
			out = append(out, t)
		}
	}
	for v := range keep {
		out = append(out, fingerprintRow{value: v, n: changedPartition})
	}
	return out
}

// changedPartition is the stored n of a partition known to differ from
// what rwc left: it matches no probe.
const changedPartition = -2

// targetClean reports whether the target over window is as the last
// refresh left it: no DML by anyone else since (targetDirt).
func targetClean(f *compile.Flow, window *predicate.Predicate, target []fingerprintRow, stored prints) bool {
	dirty, unknown := targetDirt(f, window, target, stored)
	return len(dirty) == 0 && !unknown
}

// targetAfter is what a refresh stores for the target after its write:
// the rows it inserted and its transaction, the partitions it rewrote
// (within written, values among them; nil: the whole window) with the rows
// it inserted in each (counts), and, for the others, the fingerprints taken
// before the write (before), which it did not change. Nothing is probed
// again: what it wrote is recognised at the next refresh.
func targetAfter(ctx context.Context, tx *sql.Tx, f *compile.Flow, written *predicate.Predicate, values []string, before []fingerprintRow, inserted int64, counts map[string]int64) ([]fingerprintRow, error) {
	var writer int64
	// The write runs in the top-level transaction (no savepoint is open
	// then), so its rows' xmin is the transaction's own id, modulo 2^32 as
	// xmin is; the full id is stored, to tell when that no longer
	// identifies it (loadFingerprints).
	if err := tx.QueryRowContext(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&writer); err != nil {
		return nil, err
	}
	out := []fingerprintRow{{source: rewrittenKey.source, whole: rewrittenKey.whole, value: rewrittenKey.value, n: inserted, h: writer}}
	if written == nil {
		return out, nil
	}
	// The partitions rewritten: those that changed, and any other the
	// write's predicate covers (past maxIncrementalPartitions it is the
	// range they span) that had rows before.
	marked := map[string]bool{}
	for _, v := range values {
		marked[v] = true
	}
	for _, b := range before {
		if rewrote(f, written, b.value) {
			marked[b.value] = true
		} else {
			out = append(out, b)
		}
	}
	for v := range marked {
		out = append(out, fingerprintRow{value: v, n: rewrittenCounted, h: counts[v]})
	}
	return out, nil
}

// rewrote reports whether a write within written replaced the rows of a
// partition value. A value that does not parse ('infinity', a BC date) was
// never listed in a narrowed window (Narrow refuses it), so it was not.
func rewrote(f *compile.Flow, written *predicate.Predicate, v string) bool {
	val, ok := parsePartition(f, v)
	if !ok {
		return false
	}
	in, err := written.Eval(map[string]predicate.Value{f.PartitionBy: val}, predicate.Resolution{})
	return err == nil && in
}

// changedValues compares this refresh's source fingerprints with those
// stored by the last one: the partition values of the window whose source
// rows changed, sorted (none: nothing changed). The caller asked
// wholeReason first: fingerprints are stored, and no source fingerprinted
// whole forces the window.
func changedValues(f *compile.Flow, window *predicate.Predicate, sources []fingerprintRow, stored prints) []string {
	inWindow := inWindowOf(f, window)
	changed := map[string]bool{}
	bySource := map[string][]fingerprintRow{}
	for _, s := range sources {
		if !s.whole {
			bySource[s.source] = append(bySource[s.source], s)
		}
	}
	for src, rows := range bySource {
		for _, v := range diffValues(rows, stored.parts, src, inWindow) {
			changed[v] = true
		}
	}
	// A source with no rows in the window has no probe rows but may have
	// had some before.
	for k := range stored.parts {
		if k.source != "" && !k.whole && len(bySource[k.source]) == 0 && inWindow(k.value) {
			changed[k.value] = true
		}
	}
	values := make([]string, 0, len(changed))
	for v := range changed {
		values = append(values, v)
	}
	sort.Strings(values)
	return values
}

// storeCapture stores what the next refresh compares with: the sources as
// probed, the target as the write left it. It returns the rows the target
// holds in the window now.
func storeCapture(ctx context.Context, tx *sql.Tx, c *capture, dec compile.Decision, override bool, window, resolved *predicate.Predicate, dirtyBefore []string, inserted int64, counts map[string]int64) (int64, error) {
	f := c.f
	if c.skipped {
		return c.stored.targetRows(), nil // nothing changed: what is stored stays true
	}
	sources, err := c.allSources(ctx, tx)
	if err != nil {
		return 0, queryError(f, err)
	}
	var target []fingerprintRow
	switch {
	case override:
		// Its range is not the window's: fingerprint the window again,
		// but for the partitions changed by DML that it left alone.
		if target, err = probeTarget(ctx, tx, f, window, prints{}, nil, c.obs); err == nil {
			target = keepDirt(f, resolved, target, dirtyBefore)
		}
	case dec.Unchanged:
		target, err = c.targetBefore() // nothing changed, nothing written
	case f.TargetDistributed(c.obs):
		target, err = c.probedAfter(ctx, tx, dec)
	default:
		var before []fingerprintRow
		if dec.Narrowed != nil {
			before, err = c.targetBefore()
		}
		if err == nil {
			target, err = targetAfter(ctx, tx, f, dec.Narrowed, dec.Partitions, before, inserted, counts)
		}
	}
	if err != nil {
		return 0, err
	}
	if err := storeFingerprints(ctx, tx, f, window, sources, target, override); err != nil {
		return 0, err
	}
	var rows int64
	for _, t := range target {
		rows += max(t.n, 0) // a rewrite's mark counts the rows inserted
	}
	return rows, nil
}

// probedAfter is what a refresh stores for a target that Citus
// distributes: the fingerprints of what it wrote (the partitions, or the
// whole window), probed in its transaction after the write, and those of
// the rest as probed before. Its rows' xmin are the workers' transactions,
// which no mark of the coordinator's would recognise at the next refresh.
func (c *capture) probedAfter(ctx context.Context, tx *sql.Tx, dec compile.Decision) ([]fingerprintRow, error) {
	written := dec.Narrowed
	var kept []fingerprintRow
	if written != nil {
		before, err := c.targetBefore()
		if err != nil {
			return nil, err
		}
		for _, b := range before {
			if !rewrote(c.f, written, b.value) {
				kept = append(kept, b)
			}
		}
	} else {
		written = c.window
	}
	tp, err := c.f.TargetProbe([]*predicate.Predicate{written}, 0, c.obs)
	if err != nil {
		return nil, err
	}
	probed, err := runProbe(ctx, tx, tp)
	return append(kept, probed...), err
}

// inWindowOnly drops the rows a target probe took outside the window now
// (in partitions the last refresh rewrote, which time or a narrower
// predicate have since left): they are not this refresh's to store.
func inWindowOnly(rows []fingerprintRow) []fingerprintRow {
	out := rows[:0:0]
	for _, r := range rows {
		if r.inWindow {
			out = append(out, r)
		}
	}
	return out
}

// diffValues lists the partition values (within the window) where the
// current fingerprint of source differs from the stored one.
func diffValues(cur []fingerprintRow, stored map[fpKey][2]int64, source string, inWindow func(string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cur {
		seen[c.value] = true
		if stored[fpKey{source, c.whole, c.value}] != [2]int64{c.n, c.h} {
			out = append(out, c.value)
		}
	}
	whole := len(cur) > 0 && cur[0].whole
	for k := range stored {
		if k.source == source && k.whole == whole && !seen[k.value] && inWindow(k.value) {
			out = append(out, k.value)
		}
	}
	return out
}

func parsePartition(f *compile.Flow, v string) (predicate.Value, bool) {
	switch f.Table.Column(f.PartitionBy).Type.Family {
	case pgtype.Date:
		d, err := predicate.ParseDate(v)
		return d, err == nil
	case pgtype.Int:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	case pgtype.Text:
		return v, true
	}
	return nil, false
}

// storeFingerprints replaces the flow's fingerprints with this refresh's:
// the sources as probed before the write, the target as the write left it.
// After an override the sources were not probed; their fingerprints stay,
// and so does the mark that fingerprints were taken (or its absence).
func storeFingerprints(ctx context.Context, tx *sql.Tx, f *compile.Flow, window *predicate.Predicate, sources, target []fingerprintRow, targetOnly bool) error {
	if targetOnly {
		// Only the window's values were probed (and found clean before the
		// override): the fingerprints of values outside it, which the window
		// the state records may still cover (the spec changed since), stay.
		stored, err := loadFingerprints(ctx, tx, f.Name())
		if err != nil {
			return err
		}
		inWindow := inWindowOf(f, window)
		var values []string
		for k := range stored.parts {
			if k.source == "" && !k.whole && inWindow(k.value) {
				values = append(values, k.value)
			}
		}
		for _, fr := range target {
			values = append(values, fr.value)
		}
		// The override probed the whole window the state records: what it
		// stores supersedes a mark that the last refresh rewrote it.
		if _, err := tx.ExecContext(ctx, `DELETE FROM rwc.fingerprints WHERE flow = $1 AND source = ''
				AND (NOT whole AND value = ANY($2) OR whole AND value = $3)`,
			f.Name(), pq.Array(values), rewrittenKey.value); err != nil {
			return err
		}
	} else if _, err := tx.ExecContext(ctx, `WITH gone AS (DELETE FROM rwc.captures WHERE flow = $1)
		DELETE FROM rwc.fingerprints WHERE flow = $1`, f.Name()); err != nil {
		return err // what triggers vouch for goes with the fingerprints they vouch for (storeEpochs)
	}
	rows := append([]fingerprintRow(nil), target...)
	if !targetOnly {
		rows = append(rows, sources...)
		rows = append(rows, fingerprintRow{source: takenKey.source, whole: takenKey.whole, value: takenKey.value})
	}
	var src, val []string
	var whole []bool
	var n, h []int64
	for _, fr := range rows {
		src, whole, val, n, h = append(src, fr.source), append(whole, fr.whole), append(val, fr.value), append(n, fr.n), append(h, fr.h)
	}
	// One statement, however many partitions: a 90-day window stores a
	// hundred rows or more.
	_, err := tx.ExecContext(ctx, `INSERT INTO rwc.fingerprints (flow, source, whole, value, n, h)
		SELECT $1, * FROM unnest($2::text[], $3::boolean[], $4::text[], $5::bigint[], $6::bigint[])`,
		f.Name(), pq.Array(src), pq.Array(whole), pq.Array(val), pq.Array(n), pq.Array(h))
	return err
}

package compile

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// A partitioned target (partitioning:) is a table partitioned by range on
// a date column, one partition per interval. rwc creates the partitions
// ahead of the window (Premake), and refreshes each partition that lies
// wholly inside what it writes by building the partition's new rows in a
// staging table and swapping that in (Swap), without a DELETE: no dead
// rows, nothing to vacuum. The rest of what it writes (a partition the
// window cuts, partitions after the refresh's day) is the ordinary DELETE
// and INSERT, through the parent.

// PartitionBound is one partition of a partitioned target as the catalog
// has it: its name and its range [From, To).
type PartitionBound struct {
	Name     string
	From, To predicate.Date
	// Qualified is its name with its schema, quoted, as the catalog has
	// them ("": not read).
	Qualified string `json:",omitempty"`
}

// premakeAhead is how many intervals after the refresh's day rwc creates
// partitions for, so that rows a little ahead of the clock (a time zone
// ahead, tomorrow's bookings) have somewhere to go.
const premakeAhead = 2

// maxPartitions bounds the partitions one refresh creates or swaps: a
// window of years of daily partitions is a spec to fix, not thousands of
// tables to create at once.
const maxPartitions = 1000

// Partitioned reports whether f's target is a partitioned table: its spec
// has partitioning:, which passed lint.
func (f *Flow) Partitioned() bool { return f.partitioned }

// partitionStart is the first day of the partition holding d.
func (f *Flow) partitionStart(d predicate.Date) predicate.Date {
	t := d.Time()
	switch f.Table.Partitioning.Interval {
	case "week":
		return d - predicate.Date((int(t.Weekday())+6)%7) // ISO weeks start on Monday
	case "month":
		return predicate.DateOf(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC))
	case "year":
		return predicate.DateOf(time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC))
	}
	return d
}

// partitionEnd is the first day after the partition starting at start.
func (f *Flow) partitionEnd(start predicate.Date) predicate.Date {
	t := start.Time()
	switch f.Table.Partitioning.Interval {
	case "week":
		return start + 7
	case "month":
		return predicate.DateOf(t.AddDate(0, 1, 0))
	case "year":
		return predicate.DateOf(t.AddDate(1, 0, 0))
	}
	return start + 1
}

// PartitionName is the name rwc gives the partition of table starting at
// from: the table's name, _p and the day (orders_p20261201); a name too
// long for PostgreSQL's 63 bytes keeps a prefix and a hash of the whole
// name. stage names the staging table that replaces it (_s).
func PartitionName(table string, from predicate.Date, stage bool) string {
	tag := "_p"
	if stage {
		tag = "_s"
	}
	suffix := tag + from.Time().Format("20060102")
	base := table
	if len(base)+len(suffix) > 63 {
		h := sha256.Sum256([]byte(table))
		base = base[:63-len(suffix)-9] + "_" + hex.EncodeToString(h[:4])
	}
	return base + suffix
}

// qualified is a relation of f's schema, quoted.
func (f *Flow) qualified(name string) string {
	return pq.QuoteIdentifier(f.Table.Pipeline.Schema) + "." + pq.QuoteIdentifier(name)
}

// dateRange is one partition's range [from, to).
type dateRange struct{ from, to predicate.Date }

// cel is the range as a predicate on the partition column.
func (f *Flow) rangeCEL(r dateRange) string {
	col := f.Table.Partitioning.By
	return fmt.Sprintf("%s >= date('%s') && %s < date('%s')", col, r.from, col, r.to)
}

// rangeSQL is the range as PostgreSQL's partition constraint states it.
func (f *Flow) rangeSQL(r dateRange) string {
	col := pq.QuoteIdentifier(f.Table.Partitioning.By)
	return fmt.Sprintf("%s IS NOT NULL AND %s >= DATE '%s' AND %s < DATE '%s'", col, col, r.from, col, r.to)
}

func (r dateRange) bound() string {
	return fmt.Sprintf("FOR VALUES FROM ('%s') TO ('%s')", r.from, r.to)
}

// partitionsOf lists the partitions that hold the rows p can select, from
// its lower bound to its upper one, or, unbounded above, to premakeAhead
// intervals after today (nil, ok: p has no lower bound on the column, or
// selects nothing: no partition can be named).
func (f *Flow) partitionsOf(p *predicate.Predicate, today predicate.Date) ([]dateRange, error) {
	lo, hi, hasLo, hasHi, ok := predicate.DateHull(p, f.Table.Partitioning.By)
	if !ok || !hasLo {
		return nil, nil
	}
	if !hasHi {
		hi = f.partitionStart(max(lo, today))
		for range premakeAhead {
			hi = f.partitionEnd(hi)
		}
	}
	var out []dateRange
	for start := f.partitionStart(lo); start <= hi; start = f.partitionEnd(start) {
		if len(out) == maxPartitions {
			return nil, fmt.Errorf("flow %s: the window spans more than %d %s partitions from %s: narrow the window, or partition by a longer interval", f.Name(), maxPartitions, f.Table.Partitioning.Interval, lo)
		}
		out = append(out, dateRange{start, f.partitionEnd(start)})
	}
	return out, nil
}

// WindowPartitions names the partitions of a partitioned target (obs)
// that can hold rows of window, by its hull on the partition column: those
// whose catalog rows the target's triggers vouch for (what anyone does to
// the others cannot change the window). nil: every partition counts (the
// target is not partitioned, the hull is unknown, or a partition's bound
// could not be read: a DEFAULT one can hold any row).
func (f *Flow) WindowPartitions(window *predicate.Predicate, obs Observation) []string {
	bounds, ok := f.windowBounds(window, obs)
	if !ok {
		return nil
	}
	names := []string{}
	for _, b := range bounds {
		names = append(names, b.Name)
	}
	return names
}

// windowBounds is WindowPartitions' partitions, with their bounds; false:
// every partition counts.
func (f *Flow) windowBounds(window *predicate.Predicate, obs Observation) ([]PartitionBound, bool) {
	if !obs.Partitioned || obs.UnreadBounds {
		return nil, false
	}
	lo, hi, hasLo, hasHi, ok := predicate.DateHull(window, f.Table.Partitioning.By)
	if !ok {
		return nil, false
	}
	var out []PartitionBound
	for _, b := range obs.Partitions {
		if hasLo && b.To <= lo || hasHi && b.From > hi {
			continue
		}
		out = append(out, b)
	}
	return out, true
}

// ProbeLocks is what a probe of the target over regions (nil ones left
// out) locks before it
// starts (see run's aside): the parent alone and the partitions that can
// hold rows of regions, each by its own name, or, when which those are is
// not known (a DEFAULT partition, a hull on the partition column missing),
// the target with every partition. Locking a parent locks each of its
// partitions, opening it: 1.6 ms more for a year's daily partitions in a
// new session, which the refresh waits for before it writes.
func (f *Flow) ProbeLocks(obs Observation, regions ...*predicate.Predicate) []string {
	if !obs.Partitioned {
		return []string{f.Target()}
	}
	seen := map[string]bool{}
	locks := []string{"ONLY " + f.Target()}
	for _, r := range regions {
		if r == nil {
			continue
		}
		bounds, ok := f.windowBounds(r, obs)
		if !ok {
			return []string{f.Target()}
		}
		for _, b := range bounds {
			if b.Qualified == "" {
				return []string{f.Target()}
			}
			if !seen[b.Qualified] {
				// Without ONLY: a partition partitioned in turn is locked
				// with its own partitions.
				seen[b.Qualified] = true
				locks = append(locks, b.Qualified)
			}
		}
	}
	return locks
}

// existing is the partition of obs that has range r, "" when none has;
// overlapped says that another partition holds part of r (one made by
// hand, or a plain target's history attached as one partition: see
// docs/concepts.md): rwc neither creates r nor swaps it, and refreshes its
// rows with DELETE and INSERT through the parent.
func existing(obs Observation, r dateRange) (name string, overlapped bool) {
	for _, b := range obs.Partitions {
		switch {
		case b.From == r.from && b.To == r.to:
			return b.Name, false
		case b.From < r.to && r.from < b.To:
			overlapped = true
		}
	}
	return "", overlapped
}

// overflow is the query for the partition values p's rows have after the
// last partition made (made), when p has no upper bound: rows dated after
// the partitions made ahead (next month's bookings in a daily window) need
// partitions too, which the refresh creates from its answer (Premake for)
// before it inserts them. "" when p is bounded above.
func (f *Flow) overflow(p *predicate.Predicate, made []dateRange, obs Observation) (string, error) {
	_, _, _, hasHi, ok := predicate.DateHull(p, f.Table.Partitioning.By)
	if !ok || hasHi || len(made) == 0 {
		return "", nil
	}
	col := f.Table.Partitioning.By
	beyond, issues := f.CompilePredicate(fmt.Sprintf("(%s) && %s >= date('%s')", p.Root.CEL(), col, made[len(made)-1].to))
	if len(issues) > 0 {
		return "", fmt.Errorf("%s", issues[0].Message)
	}
	where, err := beyond.SQL(nil)
	if err != nil {
		return "", err
	}
	src, _ := f.pushedQuery(beyond, obs)
	q := pq.QuoteIdentifier(col)
	return fmt.Sprintf("SELECT DISTINCT (src.%s)::text FROM (\n%s\n) AS src\nWHERE %s", q, f.typedSource(beyond.Columns, src), where), nil
}

// PremakeFor creates the partitions missing for the partition values
// values (as PostgreSQL prints them): those Statements.Overflow found.
func (f *Flow) PremakeFor(values []string, obs Observation) ([]string, error) {
	seen := map[dateRange]bool{}
	var out []string
	for _, v := range values {
		d, err := predicate.ParseDate(v)
		if err != nil {
			return nil, fmt.Errorf("flow %s: partition value %q: %v", f.Name(), v, err)
		}
		start := f.partitionStart(d)
		r := dateRange{start, f.partitionEnd(start)}
		if name, overlapped := existing(obs, r); seen[r] || name != "" || overlapped {
			continue
		}
		seen[r] = true
		out = append(out, f.premakeSQL(r, obs)...)
	}
	return out, nil
}

// union is the ranges of a and of b, in order, once each.
func union(a, b []dateRange) []dateRange {
	seen := map[dateRange]bool{}
	var out []dateRange
	for _, r := range append(slices.Clone(a), b...) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y dateRange) int { return cmp.Compare(x.from, y.from) })
	return out
}

// Swap is the replacement of one whole partition: its new rows are built
// in a staging table (Build, Load, Prepare: before the lock, while readers
// go on reading the old partition), then exchanged for the old partition (Exchange) under the
// parent's ACCESS EXCLUSIVE lock (Statements.Lock), taken just before the
// refresh commits.
type Swap struct {
	From, To  string
	Partition string // the partition now, quoted
	Stage     string // the staging table, quoted
	// Build creates the staging table with the CHECK constraint that
	// proves its rows fit the partition (ATTACH then skips its validation
	// scan): made on the empty table, it costs no scan, and each row is
	// checked as it is inserted.
	Build string
	// Load inserts the partition's rows: the query, its predicate pushed
	// down for the partition's range, so that each source reads that range.
	Load string
	// Counted: how Load counts its rows per partition value (see
	// Flow.counted; by its command tag when the range holds one value of
	// the flow's partition column, a day's partition of a date column).
	Counted Counted
	// Prepare builds the target's indexes on the loaded rows (ATTACH
	// attaches them rather than building its own under the lock), and
	// gives it rwc's trigger (partitionTriggers).
	Prepare []string
	// Exchange drops the old partition (which detaches it: no DETACH of
	// its own, one catalog change less under the lock), attaches the new
	// and renames it, and its indexes, after the old.
	Exchange []string
}

// premakeSQL creates a missing partition: an empty table attached to the
// parent. ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the parent,
// which readers and writers do not wait for (CREATE TABLE … PARTITION OF
// would take ACCESS EXCLUSIVE). It gets rwc's trigger before it is
// attached, so that no write reaches it unlogged (partitionTriggers).
func (f *Flow) premakeSQL(r dateRange, obs Observation) []string {
	name := f.qualified(PartitionName(f.Table.Name, r.from, false))
	out := []string{fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS)", name, f.Target())}
	out = append(out, f.partitionTriggers(name, obs)...)
	return append(out, fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s %s", f.Target(), name, r.bound()))
}

// swapSQL renders the swap of the partition with range r (p: r compiled,
// named old now).
func (f *Flow) swapSQL(r dateRange, p *predicate.Predicate, old string, obs Observation, perPartition bool) (Swap, error) {
	stageName := PartitionName(f.Table.Name, r.from, true)
	stage := f.qualified(stageName)
	load, err := f.insertInto(stage, p, obs)
	if err != nil {
		return Swap{}, err
	}
	var counted Counted
	if perPartition {
		one := ""
		if f.oneValue(r) {
			one = r.from.String()
		}
		load, counted = f.counted(load, one)
	}
	s := Swap{From: r.from.String(), To: r.to.String(), Partition: f.qualified(old), Stage: stage, Load: load, Counted: counted,
		Build: fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS, CONSTRAINT %s CHECK (%s))", stage, f.Target(),
			pq.QuoteIdentifier(stageName+"_bound"), f.rangeSQL(r)),
	}
	canonical := PartitionName(f.Table.Name, r.from, false)
	var renames []string
	for _, ix := range f.indexes {
		s.Prepare = append(s.Prepare, stageIndexSQL(stage, IndexName(stageName, ix), ix)...)
		renames = append(renames, fmt.Sprintf("ALTER INDEX %s RENAME TO %s", f.qualified(IndexName(stageName, ix)), pq.QuoteIdentifier(IndexName(canonical, ix))))
	}
	// After the load, which it would log for nothing.
	s.Prepare = append(s.Prepare, f.partitionTriggers(stage, obs)...)
	s.Exchange = append([]string{
		"DROP TABLE " + s.Partition,
		fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s %s", f.Target(), stage, r.bound()),
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", stage, pq.QuoteIdentifier(canonical)),
	}, renames...)
	return s, nil
}

// oneValue reports whether every row of r's partition holds the same
// value of the flow's partition column: it is the partitioning column, a
// date, and r is one day (the staging table's CHECK admits no NULL).
func (f *Flow) oneValue(r dateRange) bool {
	c := f.Table.Column(f.Table.Partitioning.By)
	return f.PartitionBy == f.Table.Partitioning.By && c != nil && c.Type.Family == pgtype.Date && r.to == r.from+1
}

// swapLockSQL locks the parent and the partitions the swaps replace, and
// no other: every reader through the parent waits for the parent's lock,
// and one reading a partition directly waits only when it is one the swap
// drops. Locking the parent with its every partition (LOCK TABLE without
// ONLY) took a lock for each of a year's 365 daily partitions, and held
// them all to the commit, for nothing. A DEFAULT partition is locked
// too: ATTACH scans it for rows of the new range, under ACCESS EXCLUSIVE;
// waiting for that lock there, after the lock step, would hold the parent
// from every reader for up to the lock timeout, where the lock step's
// attempts give the parent back between tries.
func swapLockSQL(parent string, swaps []Swap, def string) string {
	names := []string{"ONLY " + parent}
	for _, sw := range swaps {
		names = append(names, "ONLY "+sw.Partition)
	}
	if def != "" {
		names = append(names, "ONLY "+def)
	}
	return "LOCK TABLE " + strings.Join(names, ", ") + " IN ACCESS EXCLUSIVE MODE"
}

// countSwapped counts the rows the swaps remove: those of the partitions
// they replace.
func countSwapped(swaps []Swap) string {
	parts := make([]string, len(swaps))
	for i, sw := range swaps {
		parts[i] = "(SELECT count(*) FROM " + sw.Partition + ")"
	}
	return "SELECT " + strings.Join(parts, " + ")
}

// stageIndexSQL builds one of the target's indexes on a staging table, for
// ATTACH PARTITION to attach to the parent's index of the same definition.
// Its name is the staging table's (IndexName); the swap renames it after
// the partition's once the old partition, and its index, are gone: the
// names stay deterministic, however many swaps came before. The primary
// key's index becomes the staging table's primary key: ATTACH attaches a
// partition's index to the parent's key only when it backs a key of its
// own, and would build one, under the lock, from a unique index alone.
func stageIndexSQL(stage, name string, ix Index) []string {
	verb := "CREATE INDEX"
	if ix.Unique {
		verb = "CREATE UNIQUE INDEX"
	}
	s := fmt.Sprintf("%s %s ON %s USING %s (%s)", verb, pq.QuoteIdentifier(name), stage, ix.Using, ix.quotedColumns())
	if ix.WhereSQL != "" {
		s += " WHERE " + ix.WhereSQL
	}
	if ix.Primary {
		return []string{s, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY USING INDEX %s", stage, pq.QuoteIdentifier(name), pq.QuoteIdentifier(name))}
	}
	return []string{s}
}

// premakes creates the partitions missing for ranges: those that neither
// exist nor overlap one that does (known only when the partitions were
// read, or the refresh creates the target).
func (f *Flow) premakes(ranges []dateRange, d Decision, obs Observation) []string {
	if !obs.PartitionsRead && d.Action != ActionCreate {
		return nil
	}
	var out []string
	for _, r := range ranges {
		if name, overlapped := existing(obs, r); name == "" && !overlapped {
			out = append(out, f.premakeSQL(r, obs)...)
		}
	}
	return out
}

// PartitionsFirst is, beside a DEFAULT partition, Statements.PartitionsFirst
// of a refresh of resolved, known before its capture decides what it
// writes (what it writes lies within resolved): a refresh that must make
// partitions first then captures once, after they are made.
func (f *Flow) PartitionsFirst(resolved *predicate.Predicate, d Decision, obs Observation) ([]string, error) {
	if !f.Partitioned() || obs.DefaultPartition == "" {
		return nil, nil
	}
	all, err := f.partitionsOf(resolved, obs.Today)
	if err != nil {
		return nil, err
	}
	return f.premakes(all, d, obs), nil
}

// partitionedWrites is Writes for a partitioned target: the partitions
// missing for what it writes (p) or for the window (or the override's
// range: resolved) are created, those wholly inside it (up to
// the refresh's day: later ones are empty, or nearly) are swapped, and the
// rest of p is deleted and inserted through the parent. An override (a
// backfill, --where) swaps only whole partitions outside the flow's
// window: its store step fingerprints the window right after its write,
// before any swap could have run. A full refresh deletes and inserts
// throughout. Partitions are created first, in each case; beside a
// DEFAULT partition, in a transaction of their own (PartitionsFirst).
func (f *Flow) partitionedWrites(d Decision, p, resolved *predicate.Predicate, full, perPartition bool, obs Observation) (Statements, error) {
	s, err := f.Statements(p, full, obs)
	if err != nil {
		return s, err
	}
	if perPartition {
		s.Insert, s.Counted = f.counted(s.Insert, "")
	}
	ranges, err := f.partitionsOf(p, obs.Today)
	if err != nil {
		return s, err
	}
	all, err := f.partitionsOf(resolved, obs.Today)
	if err != nil {
		return s, err
	}
	made := union(all, ranges)
	s.Premake = f.premakes(made, d, obs)
	if obs.DefaultPartition != "" {
		s.PartitionsFirst, s.Premake = s.Premake, nil
	}
	if s.Overflow, err = f.overflow(p, made, obs); err != nil {
		return s, err
	}
	if full {
		return s, nil
	}
	outside, ok := f.swappable(d)
	if !ok {
		return s, nil
	}
	var swapped []dateRange
	for _, r := range ranges {
		rp, issues := f.CompilePredicate(f.rangeCEL(r))
		if len(issues) > 0 || r.from > obs.Today || !predicate.Contains(p, rp) || outside != nil && !predicate.Contains(outside, rp) {
			continue
		}
		old, overlapped := existing(obs, r)
		if overlapped {
			continue
		}
		if old == "" {
			old = PartitionName(f.Table.Name, r.from, false) // created above, or assumed
		}
		sw, err := f.swapSQL(r, rp, old, obs, perPartition)
		if err != nil {
			return s, err
		}
		s.Swaps = append(s.Swaps, sw)
		swapped = append(swapped, r)
	}
	if len(swapped) == 0 {
		return s, nil
	}
	s.Lock = swapLockSQL(f.Target(), s.Swaps, obs.DefaultPartition)
	covered := f.rangesCEL(swapped)
	union, issues := f.CompilePredicate(covered)
	if len(issues) > 0 {
		return s, fmt.Errorf("swapped partitions: %s", issues[0].Message)
	}
	s.CountSwapped = countSwapped(s.Swaps)
	if predicate.Contains(union, p) {
		s.Delete, s.Insert = "", ""
		return s, nil
	}
	// The rest: p outside the swapped partitions.
	rest, issues := f.CompilePredicate("(" + p.Root.CEL() + ") && !(" + covered + ")")
	if len(issues) > 0 {
		return s, fmt.Errorf("the window outside the swapped partitions: %s", issues[0].Message)
	}
	r, err := f.Statements(rest, false, obs)
	if err != nil {
		return s, err
	}
	s.Delete, s.Insert = r.Delete, r.Insert
	if perPartition {
		s.Insert, s.Counted = f.counted(s.Insert, "")
	}
	return s, nil
}

// swappable is where d may swap partitions in: anywhere (nil) for a
// window refresh; outside the flow's window for an override, whose store
// step fingerprints the window before any swap could run. Not ok: an
// override with no window to keep out of deletes and inserts throughout.
func (f *Flow) swappable(d Decision) (outside *predicate.Predicate, ok bool) {
	if d.Action != ActionBackfill {
		return nil, true
	}
	if d.Window == nil {
		return nil, false
	}
	outside, issues := f.CompilePredicate("!(" + d.Window.Root.CEL() + ")")
	return outside, len(issues) == 0
}

// rangesCEL is the union of ranges (in order), adjacent ones merged, as
// CEL: the days swapped, which the rest of the write leaves out.
func (f *Flow) rangesCEL(ranges []dateRange) string {
	var merged []dateRange
	for _, r := range ranges {
		if n := len(merged); n > 0 && merged[n-1].to == r.from {
			merged[n-1].to = r.to
			continue
		}
		merged = append(merged, r)
	}
	parts := make([]string, len(merged))
	for i, r := range merged {
		parts[i] = "(" + f.rangeCEL(r) + ")"
	}
	return strings.Join(parts, " || ")
}

// wholePartitions widens an incremental refresh's narrowed window to the
// whole partitions that hold a changed value and lie wholly inside the
// window: the refresh swaps those, rewriting their unchanged days too, and
// what it stores of its write must say so.
func (f *Flow) wholePartitions(window, narrowed *predicate.Predicate, values []string) (*predicate.Predicate, error) {
	seen := map[dateRange]bool{}
	var parts []string
	for _, v := range values {
		d, err := predicate.ParseDate(v)
		if err != nil {
			return nil, err
		}
		start := f.partitionStart(d)
		r := dateRange{start, f.partitionEnd(start)}
		if seen[r] {
			continue
		}
		seen[r] = true
		rp, issues := f.CompilePredicate(f.rangeCEL(r))
		if len(issues) == 0 && predicate.Contains(window, rp) && !predicate.Contains(narrowed, rp) {
			parts = append(parts, "("+f.rangeCEL(r)+")")
		}
	}
	if len(parts) == 0 {
		return narrowed, nil
	}
	w, issues := f.CompilePredicate("(" + narrowed.Root.CEL() + ") || " + strings.Join(parts, " || "))
	if len(issues) > 0 {
		return nil, fmt.Errorf("%s", issues[0].Message)
	}
	return w, nil
}

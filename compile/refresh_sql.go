package compile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Statements is the SQL of one refresh, in the order it runs. It is what a
// plan shows and exactly what the runner executes.
type Statements struct {
	Target       string // quoted schema.table
	PredicateSQL string // the window, resolved
	PredicateCEL string // the window as resolved CEL, for the state
	CreateSchema string // CREATE SCHEMA IF NOT EXISTS
	CreateTable  string // the target, from columns:
	// Distribute makes the target, just created, a Citus table
	// (distribution:; "": a local one).
	Distribute string
	// CreateIndexes build the target's indexes (Flow.Indexes) in the
	// transaction that creates it.
	CreateIndexes []string
	Delete        string // DELETE the window; of every row for a full refresh (never TRUNCATE: see Statements)
	Insert        string // INSERT BY NAME, predicate pushed down
	Yield         string // the SELECT that Insert inserts (a plan estimates its rows)
	// Counted: how Insert counts its rows per partition value (an
	// incremental write; see Flow.Writes).
	Counted      Counted
	CountOutside string   // rows a full refresh loses: outside the window
	PushedTo     []string // sources the predicate was pushed to
	// CountLost counts the rows the DELETE removes that the INSERT does not
	// give back ("" for a full refresh): for each value of the partition
	// column (the whole table when the flow has none), how many more rows
	// the target holds than the query yields, a multiset difference
	// (EXCEPT ALL; NULL is a value like any other). A row whose other
	// columns change is replaced, not lost: a backfill that fills a new
	// column or takes upstream corrections loses nothing, one that runs
	// after the sources dropped its days loses those days' rows. Run only
	// for overrides of protected flows (Flow.Protected).
	CountLost string
	// A partitioned target's (see partitionedWrites): Premake creates the
	// partitions missing for what the refresh writes, before its DELETE;
	// Swaps replace whole partitions, their Exchange run under Lock, the
	// refresh's last statements before it commits.
	Premake []string
	// PartitionsFirst is Premake for a target with a DEFAULT partition:
	// ATTACH PARTITION scans the DEFAULT one for rows of the new range
	// under ACCESS EXCLUSIVE, held to the commit, so in the refresh's own
	// transaction it would keep readers not pruned to other partitions
	// waiting for the whole refresh. These commit on their own, first (an
	// empty partition changes no reader's rows); the refresh then runs,
	// with none missing.
	PartitionsFirst []string
	// Overflow lists the partition values of rows after the partitions
	// Premake makes (a window open above); the refresh creates their
	// partitions too (Flow.PremakeFor) before its INSERT.
	Overflow string
	Swaps    []Swap
	// CountSwapped counts the rows of the partitions the swaps replace.
	CountSwapped string
	Lock         string
	// Discard drops the partitions an earlier write of the same refresh
	// staged and that it no longer swaps in (OnTop).
	Discard []string
}

// OnTop is what a refresh sends when it writes whole, the whole window's
// statements, on top of first, an incremental write it sent already (the
// target turned out changed outside rwc): first as it was sent, without
// its swap, which the refresh never makes then; and whole, which first
// drops the partitions first staged, and makes none first made.
func OnTop(first, whole Statements) (Statements, Statements) {
	first.Lock = ""
	swaps := make([]Swap, len(first.Swaps))
	whole.Discard = nil
	for i, sw := range first.Swaps {
		sw.Exchange = nil
		swaps[i] = sw
		whole.Discard = append(whole.Discard, "DROP TABLE "+sw.Stage)
	}
	first.Swaps = swaps
	whole.Premake, whole.PartitionsFirst = nil, nil
	return first, whole
}

// List returns the statements that change data, in the order they run,
// for display.
func (s Statements) List() []string {
	var out []string
	add := func(xs ...string) {
		for _, x := range xs {
			if x != "" {
				out = append(out, x)
			}
		}
	}
	add(s.Discard...)
	add(s.Premake...)
	add(s.Overflow)
	add(s.Delete, s.Insert)
	for _, sw := range s.Swaps {
		add(sw.Build, sw.Load)
		add(sw.Prepare...)
	}
	add(s.CountSwapped, s.Lock)
	for _, sw := range s.Swaps {
		add(sw.Exchange...)
	}
	return out
}

// Target is the quoted, schema-qualified target table name.
func (f *Flow) Target() string {
	return pq.QuoteIdentifier(f.Table.Pipeline.Schema) + "." + pq.QuoteIdentifier(f.Table.Name)
}

// Observation is what rwc reads of the database before it renders a
// flow's statements, which depend on it: a refresh observes in its own
// transaction, a plan with a database in a read-only one, and a plan
// without one assumes the zero value (and says so).
type Observation struct {
	// Settings: for maintain: immediate, the session's values of
	// MaintainedSettings, which the maintenance functions run with (nil
	// without a database).
	Settings []Setting `json:",omitempty"`
	// Mismatches are the predicate's columns that the query outputs with
	// another type than the target stores (a timestamp into a date
	// column): the predicate means something else on the sources, so it is
	// applied after the query only, and what changed cannot be read from
	// the sources' rows either.
	Mismatches []TypeMismatch
	// JoinMismatches are the source columns that the query joins the
	// window's columns to, of another type or under a nondeterministic
	// collation (JoinMismatch): like Mismatches, the window is applied
	// after the query only.
	JoinMismatches []JoinMismatch `json:",omitempty"`
	// Collations are the window's text columns that the query yields, or
	// the target stores, under a nondeterministic collation (see
	// windowCollations).
	Collations []WindowCollation `json:",omitempty"`
	// Blocker: why the flow's changes cannot be read from its sources'
	// rows, though its shape allows it ("": they can): a source is a view
	// or a foreign table, the query reads the clock or the session, or
	// calls a function that is not immutable.
	Blocker string `json:",omitempty"`
	// TargetMissing: the target does not exist; a refresh of the window
	// creates it, whatever the state says.
	TargetMissing bool `json:",omitempty"`
	// TargetOID is the table id the target's name holds (0: none).
	TargetOID uint32 `json:",omitempty"`
	// Indexes are the target's indexes as the catalog lists them, when
	// they were read (IndexesRead: a plan with a database reads them; a
	// refresh compares them before its transaction, see Flow.IndexChanges).
	Indexes     []CatalogIndex `json:",omitempty"`
	IndexesRead bool           `json:",omitempty"`
	// Lacks: the flow's columns that the existing target does not have yet,
	// which its column changes add before the refresh writes. A loss count
	// made before them reads them as NULL, as ADD COLUMN leaves every row.
	Lacks []string `json:",omitempty"`
	// Partitioned: the target is a partitioned table; Partitions are its
	// partitions when they were read (PartitionsRead: a refresh and a plan
	// with a database read them; without, the plan assumes rwc's names).
	Partitioned    bool             `json:",omitempty"`
	Partitions     []PartitionBound `json:",omitempty"`
	PartitionsRead bool             `json:",omitempty"`
	// Citus: the database has Citus; Distributed names the flow's tables
	// (quoted, as CaptureTables does) that are Citus tables, distributed
	// or reference: their probes run on the workers (see
	// distributedVersionHash), and no exported snapshot covers them.
	Citus       bool     `json:",omitempty"`
	Distributed []string `json:",omitempty"`
	// TargetDistribution is the target's: its distribution column,
	// "reference", or "" (a local table, or none).
	TargetDistribution string `json:",omitempty"`
	// UnreadBounds: a partition's bound is not a date range rwc reads (a
	// DEFAULT partition), and is not in Partitions.
	UnreadBounds bool `json:",omitempty"`
	// DefaultPartition is the target's DEFAULT partition, quoted ("":
	// none).
	DefaultPartition string `json:",omitempty"`
	// TargetTriggers: the partitioned target carries rwc's statement
	// trigger (it captures by triggers), so the partitions rwc creates
	// get theirs (see Flow.partitionTriggers).
	TargetTriggers bool `json:",omitempty"`
	// Today is the refresh's day, its clock read in its time zone (not the
	// database's): a partitioned target gets partitions up to a little
	// after it, and those after it are not swapped.
	Today predicate.Date `json:",omitempty"`
}

// WindowCollation is one of the window's text columns under a
// nondeterministic collation: in the query's output (Target false) or in
// the target.
type WindowCollation struct {
	Column, Collation string
	Target            bool
}

// TypeMismatch is one predicate column whose query type is not the
// target's.
type TypeMismatch struct{ Column, Query, Target string }

func (m TypeMismatch) String() string {
	return fmt.Sprintf("the query outputs %s as %s, the target stores %s: the window is applied after the query only", m.Column, m.Query, m.Target)
}

// Statements renders a refresh of f with the resolved predicate p: the
// flow's own window, or a backfill's. full deletes every row, not only the
// window's, and never with TRUNCATE: TRUNCATE is not MVCC-safe. It takes
// ACCESS EXCLUSIVE, so readers would wait for the whole recompute, and a
// reader whose snapshot predates the commit would then read an empty table.
// Under a DELETE, readers go on reading the old rows until the commit,
// without waiting.
func (f *Flow) Statements(p *predicate.Predicate, full bool, obs Observation) (Statements, error) {
	where, err := p.SQL(nil)
	if err != nil {
		return Statements{}, err
	}
	t := f.Table
	cols := make([]string, len(t.Columns))
	defs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = pq.QuoteIdentifier(c.Name)
		defs[i] = cols[i] + " " + c.Type.Canonical
	}
	s := Statements{
		Target:        f.Target(),
		PredicateSQL:  where,
		PredicateCEL:  p.Root.CEL(),
		CreateSchema:  f.CreateSchemaSQL(),
		CreateTable:   f.createTable(defs),
		Distribute:    f.distributeSQL(),
		CreateIndexes: f.CreateIndexes(),
		CountOutside:  fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", f.Target(), predicate.Complement(where)),
	}
	src, pushed := f.pushedQuery(p, obs)
	s.PushedTo = pushed
	s.Yield = f.yieldSQL(p, src, where)
	s.Insert = f.insertSQL(s.Target, p, src, where)
	if full {
		s.Delete = "DELETE FROM " + s.Target
	} else {
		s.Delete = fmt.Sprintf("DELETE FROM %s WHERE %s", s.Target, where)
		s.CountLost = f.countLost(p.Columns, f.lossKey(p.Columns), src, where, obs)
	}
	return s, nil
}

// CreateSchemaSQL creates the target's schema, if it is not there.
func (f *Flow) CreateSchemaSQL() string {
	return "CREATE SCHEMA IF NOT EXISTS " + pq.QuoteIdentifier(f.Table.Pipeline.Schema)
}

// createTable is the target's CREATE TABLE, partitioned by range on its
// partitioning column when it has one.
func (f *Flow) createTable(defs []string) string {
	s := fmt.Sprintf("CREATE TABLE %s (%s)", f.Target(), strings.Join(defs, ", "))
	if f.Partitioned() {
		s += " PARTITION BY RANGE (" + pq.QuoteIdentifier(f.Table.Partitioning.By) + ")"
	}
	return s
}

// insertSQL is the INSERT BY NAME into into (the target, or a staging
// table) of src's rows in the window where.
func (f *Flow) insertSQL(into string, p *predicate.Predicate, src, where string) string {
	return fmt.Sprintf("INSERT INTO %s (%s)\n%s", into, f.columnList(), f.yieldSQL(p, src, where))
}

// yieldSQL is the SELECT an INSERT of insertSQL inserts.
func (f *Flow) yieldSQL(p *predicate.Predicate, src, where string) string {
	list := f.columnList()
	return fmt.Sprintf("SELECT %s FROM (\n%s\n) AS src\nWHERE %s", list, f.typedSource(p.Columns, src), where)
}

func (f *Flow) columnList() string {
	cols := make([]string, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		cols[i] = pq.QuoteIdentifier(c.Name)
	}
	return strings.Join(cols, ", ")
}

// insertInto is insertSQL for p, pushed down.
func (f *Flow) insertInto(into string, p *predicate.Predicate, obs Observation) (string, error) {
	where, err := p.SQL(nil)
	if err != nil {
		return "", err
	}
	src, _ := f.pushedQuery(p, obs)
	return f.insertSQL(into, p, src, where), nil
}

// WindowLoss is the count a window refresh of a protected flow runs, in
// its own snapshot before the DELETE, when its window reaches where the last
// refresh's did not (a widened replace_where): the rows there that the query
// no longer yields. Within the last window the target already mirrors the
// query, which is what a window is; beyond it the target holds history, which
// reset_allowed: false protects. "" when f is not protected or the window
// widens nothing, or the last window is not known (the whole window is
// recomputed then, and the state has nothing to compare with).
func (f *Flow) WindowLoss(st FlowState, window *predicate.Predicate, obs Observation) string {
	prior, ok := f.widenedFrom(st, window)
	if !ok || !f.Protected(st) {
		return ""
	}
	where, err := window.SQL(nil)
	if err != nil {
		return ""
	}
	// The outer WHERE casts the columns both windows read, and they key
	// the count when the flow has no partition column (a window widened to
	// true infers none): counted as one group, rows the sources hold that
	// the target never had would hide rows lost.
	cols := slices.Clone(window.Columns)
	if prior != nil {
		priorSQL, err := prior.SQL(nil)
		if err != nil {
			return ""
		}
		where = fmt.Sprintf("(%s) AND %s", where, predicate.Complement(priorSQL))
		for _, c := range prior.Columns {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		}
	}
	src, _ := f.pushedQuery(window, obs)
	return f.countLost(cols, f.lossKey(cols), src, where, obs)
}

// lossKey is what a loss count compares the target with the query by: the
// partition column, else the predicates' columns (none: the rows as one
// group).
func (f *Flow) lossKey(cols []string) []string {
	if f.PartitionBy != "" {
		return []string{f.PartitionBy}
	}
	return cols
}

// Batches splits an override of f with where (resolved) into the batches a
// backfill runs, as CEL: along a date partition column, days at a time,
// leaving window out (nil: nothing). Any other override is one batch.
func (f *Flow) Batches(where, window *predicate.Predicate, days int) []string {
	if c := f.Table.Column(f.PartitionBy); c == nil || c.Type.Base != "date" {
		return []string{where.Root.CEL()}
	}
	batches, ok := predicate.Batches(where, window, f.PartitionBy, days)
	if !ok {
		return []string{where.Root.CEL()}
	}
	return batches
}

// BatchLoss is the loss counts (Statements.CountLost) of an override of f
// with where run as a backfill's batches outside window: what rwc apply
// counts before it starts a backfill file of a protected flow, and so what
// a plan shows.
func (f *Flow) BatchLoss(where, window *predicate.Predicate, days int, rc predicate.Resolution, obs Observation) ([]string, error) {
	return f.LossCounts(f.Batches(where, window, days), rc, obs)
}

// LossCounts is the loss counts (Statements.CountLost) of overrides of f
// with the batch predicates cels, resolved at rc.
func (f *Flow) LossCounts(cels []string, rc predicate.Resolution, obs Observation) ([]string, error) {
	var counts []string
	for _, cel := range cels {
		p, issues := f.CompilePredicate(cel)
		if len(issues) > 0 {
			return nil, fmt.Errorf("%s: %s", cel, issues[0].Message)
		}
		resolved, err := p.Resolve(rc)
		if err != nil {
			return nil, err
		}
		s, err := f.Statements(resolved, false, obs)
		if err != nil {
			return nil, err
		}
		counts = append(counts, s.CountLost)
	}
	return counts, nil
}

// Widens reports whether a window refresh of f reaches where the last
// refresh's window did not: only then can it lose history (WindowLoss).
func (f *Flow) Widens(st FlowState, window *predicate.Predicate) bool {
	_, ok := f.widenedFrom(st, window)
	return ok
}

// widenedFrom returns the last refresh's window when window reaches beyond
// it; a last window the state does not know (lost, or never stored) is
// taken as nothing, so that all of the window counts as reached anew.
func (f *Flow) widenedFrom(st FlowState, window *predicate.Predicate) (*predicate.Predicate, bool) {
	if !st.LastRefreshed {
		return nil, false
	}
	prior, ok := f.StoredWindow(st)
	if !ok {
		return nil, true
	}
	if predicate.Contains(prior, window) {
		return nil, false
	}
	return prior, true
}

// countLost renders Statements.CountLost, a multiset difference by key
// (lossKey). Both sides compare the key's values as the target stores them
// (the query's values cast to the columns' types, as the INSERT assigns
// them), printed as text: a type without an equality operator compares too.
func (f *Flow) countLost(cols, key []string, src, where string, obs Observation) string {
	var tk, sk []string
	for _, k := range key {
		if c := f.Table.Column(k); c != nil {
			name := pq.QuoteIdentifier(c.Name)
			tk = append(tk, fmt.Sprintf("(%s)::text", name))
			sk = append(sk, fmt.Sprintf("(src.%s::%s)::text", name, c.Type.Canonical))
		}
	}
	tkey, skey := "1", "1"
	if len(tk) > 0 {
		tkey, skey = strings.Join(tk, ", "), strings.Join(sk, ", ")
	}
	return fmt.Sprintf("SELECT count(*) FROM (\nSELECT %s FROM %s WHERE %s\nEXCEPT ALL\nSELECT %s FROM (\n%s\n) AS src\nWHERE %s\n) AS lost",
		tkey, f.alteredTarget(obs), where, skey, f.typedSource(cols, src), where)
}

// alteredTarget is the target as its column changes will leave it, for a
// loss count made before them: the columns it lacks yet, NULL.
func (f *Flow) alteredTarget(obs Observation) string {
	if len(obs.Lacks) == 0 {
		return f.Target()
	}
	sel := []string{"t.*"}
	for _, name := range obs.Lacks {
		if c := f.Table.Column(name); c != nil {
			sel = append(sel, fmt.Sprintf("NULL::%s AS %s", c.Type.Canonical, pq.QuoteIdentifier(c.Name)))
		}
	}
	return fmt.Sprintf("(SELECT %s FROM %s AS t) AS t", strings.Join(sel, ", "), f.Target())
}

// typedSource makes the outer WHERE see the predicate's columns with the
// target's types, as the DELETE does: a query that outputs a timestamp into
// a date column must be filtered on the date it will store, or a row at
// 10:00 on the window's last day would be deleted and never re-inserted.
// Only the predicate's columns are cast, and never to a character type,
// whose explicit cast would truncate where the INSERT would fail.
func (f *Flow) typedSource(cols []string, src string) string {
	var sel []string
	cast := false
	for _, c := range f.Table.Columns {
		name := pq.QuoteIdentifier(c.Name)
		if slices.Contains(cols, c.Name) && c.Type.Family != pgtype.Text && c.Type.Family != pgtype.Other {
			sel = append(sel, fmt.Sprintf("q.%s::%s AS %s", name, c.Type.Canonical, name))
			cast = true
			continue
		}
		sel = append(sel, "q."+name)
	}
	if !cast {
		return src
	}
	return fmt.Sprintf("SELECT %s FROM (\n%s\n) AS q", strings.Join(sel, ", "), src)
}

// pushedQuery applies the predicate to every source that exposes its
// columns (design §4): PostgreSQL pushes the outer WHERE into the subquery
// and below GROUP BY itself, but it does not carry a range condition across
// a join's equality, so each member of the column's equivalence class gets
// its own copy. When the predicate cannot be pushed, the query is used as
// written and the outer WHERE alone selects the window.
//
// A refresh renders the same predicate's statements more than once (to
// decide, then to write), and each pushdown parses and deparses the query
// twice: the answers are kept, by what they depend on.
func (f *Flow) pushedQuery(p *predicate.Predicate, obs Observation) (string, []string) {
	key := pushKey{cel: p.Root.CEL(), determinism: p.Determinism, mismatched: obs.AfterQueryOnly()}
	if v, ok := f.pushed.Load(key); ok {
		a := v.(pushAnswer)
		return a.sql, slices.Clone(a.to)
	}
	sql, to := f.pushedQueryOnce(p, obs)
	f.pushed.Store(key, pushAnswer{sql, slices.Clone(to)})
	return sql, to
}

// pushKey is what pushedQuery's answer depends on besides the flow.
type pushKey struct {
	cel         string
	determinism predicate.Determinism
	mismatched  bool
}

type pushAnswer struct {
	sql string
	to  []string
}

func (f *Flow) pushedQueryOnce(p *predicate.Predicate, obs Observation) (string, []string) {
	q := strings.TrimRight(strings.TrimSpace(f.Table.Query.Value), ";")
	if f.Query != nil {
		q = f.Query.Body
	}
	if f.Query == nil || p.Determinism == predicate.NonDeterministic || obs.AfterQueryOnly() {
		return q, nil
	}
	var conds, pushed []string
	for _, target := range f.Query.Pushable(p.Columns) {
		cond, err := p.SQL(func(col string) string { return target.Refs[col] })
		if err != nil {
			return q, nil
		}
		conds = append(conds, cond)
		pushed = append(pushed, tableName(target.Table))
	}
	if len(conds) == 0 {
		return q, nil
	}
	out, err := query.WithConditions(q, conds)
	if err != nil {
		return q, nil
	}
	return out, pushed
}

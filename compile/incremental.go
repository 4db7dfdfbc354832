package compile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// A Probe fingerprints one source (or the target) at refresh time: per
// partition value, the number of row versions and a sum of hashes of their
// physical identity (table, ctid and xmin; see versionHash), combined with XOR of 64-bit
// hashes: identities are unique, so a change goes unseen with odds 2^-64.
// Any insert, update or delete changes a version's identity, so a changed fingerprint means changed
// rows; a rewrite (VACUUM FULL, CLUSTER) may change it too, which only costs
// a needless recompute. The table (tableoid) is part of the identity: two
// tables written by one transaction hold versions with equal ctid and xmin,
// and swapping one for the other as a partition of a source must show.
// Reading system columns avoids detoasting rows, and because probes read
// the data itself there is no blind spot: TRUNCATE, disabled triggers,
// partition DDL and a recreated table all show.
type Probe struct {
	Source string // "schema.table" as the query names it; "" for the target
	Table  string // the table probed, quoted (for LOCK TABLE)
	// Whole: the source does not expose the partition column, so it is
	// fingerprinted as a whole (one row with a NULL partition value).
	Whole  bool
	Column string // the source's column that the partition column is (not Whole)
	// Distributed: a Citus table, probed with distributedVersionHash.
	Distributed bool
	SQL         string
}

// versionHash folds the row versions of a group into 64 bits: each
// version's ctid hashed with its table and inserting transaction as the
// seed ((tableoid << 32) | xmin: injective, xids are 32 bits), then XOR.
// Hashing the tid natively instead of a text rendering of the three costs
// about half as much per row, which is most of a probe's time beyond
// reading the pages. xmin has no cast to a number but through text, which
// costs as much again; age(xmin) is an integer, and the transaction's
// reference xid, recovered once as age('3') + 3 (3 is the first normal
// xid), gives xmin back modulo 2^32, exactly, across wraparound. Special
// xids (frozen by an old release) have no age (INT_MAX): they stand as 2.
// Changing the hash changes every stored fingerprint: the state migration
// that ships the change must clear rwc.fingerprints.
const versionHash = "coalesce(bit_xor(hashtidextended(s.ctid, (s.tableoid::bigint << 32) | " +
	"coalesce(((SELECT age('3'::xid)::bigint + 3) - nullif(age(s.xmin), 2147483647)) & 4294967295, 2))), 0)"

// distributedVersionHash is versionHash for a Citus table (distributed or
// reference), whose probe runs on the workers, shard by shard: age(xmin)
// is a worker's age there, and the reference xid the coordinator's, so
// versionHash would drift at every refresh. xmin read through text is
// exact wherever it runs. (For a normal xid it is the same number as
// versionHash's, so a table distributed later keeps its fingerprints but
// for its rows, which moved to shards anyway.)
const distributedVersionHash = "coalesce(bit_xor(hashtidextended(s.ctid, (s.tableoid::bigint << 32) | s.xmin::text::bigint)), 0)"

// hashOf is the version hash for a table, distributed by Citus or not.
func hashOf(distributed bool) string {
	if distributed {
		return distributedVersionHash
	}
	return versionHash
}

// maxIncrementalPartitions bounds the partitions an incremental refresh
// recomputes by listing them; past it, it recomputes the range they span.
const maxIncrementalPartitions = 200

// Incremental says whether f can refresh incrementally at all, by its
// shape: the partition column is the predicate's only column, a date,
// integer or text, and the query exposes it to at least one source.
func (f *Flow) Incremental() bool {
	if f.Predicate == nil || f.Query == nil || f.PartitionBy == "" {
		return false
	}
	if len(f.Predicate.Columns) != 1 || f.Predicate.Columns[0] != f.PartitionBy {
		return false
	}
	switch f.Table.Column(f.PartitionBy).Type.Family {
	case pgtype.Date, pgtype.Int, pgtype.Text:
	default:
		return false
	}
	return len(f.Query.Pushable([]string{f.PartitionBy})) > 0
}

// Probes returns the fingerprint queries of f's sources for a window;
// obs.Distributed names those that Citus distributes.
//
// A source is fingerprinted per partition value only when every reference
// to it in the query is a scan the window reaches, all through one and the
// same column: then the query's rows of one partition value depend on that
// value's rows of the source alone. A reference that reads it otherwise (a
// self-join on another key, a subquery in SELECT or WHERE) makes any of its
// rows matter to every partition, so such a source is fingerprinted whole.
// The column probed is the source's own (Exposure.Column), not the name the
// top-level query gives it: a subquery may rename it.
func (f *Flow) Probes(window *predicate.Predicate, obs Observation) ([]Probe, error) {
	cols := f.partitionSources()
	var out []Probe
	for _, t := range f.Query.Tables {
		name, table := tableName(t), quoteTable(t)
		dist := slices.Contains(obs.Distributed, table)
		if c, ok := cols[name]; ok {
			p, err := partitionProbe(Probe{Source: name, Table: table, Column: c, Distributed: dist}, window)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			continue
		}
		out = append(out, Probe{Source: name, Table: table, Whole: true, Distributed: dist, SQL: fmt.Sprintf(
			"SELECT NULL::text, count(*), %s FROM %s AS s", hashOf(dist), table)})
	}
	return out, nil
}

// ProbeOf is p, a source's probe (not Whole), over another window: an
// incremental refresh's probe of the partitions that rwc's triggers logged.
func (f *Flow) ProbeOf(p Probe, window *predicate.Predicate) (Probe, error) {
	return partitionProbe(p, window)
}

// partitionProbe is p (its source, table and column) fingerprinting the
// table per value of the column within window.
func partitionProbe(p Probe, window *predicate.Predicate) (Probe, error) {
	ref := "s." + pq.QuoteIdentifier(p.Column)
	cond, err := window.SQL(func(string) string { return ref })
	if err != nil {
		return Probe{}, err
	}
	p.SQL = fmt.Sprintf("SELECT (%s)::text, count(*), %s FROM %s AS s WHERE %s GROUP BY %[1]s", ref, hashOf(p.Distributed), p.Table, cond)
	return p, nil
}

// partitionSources maps each source (tableName) whose every reference
// exposes the partition column, through one column of its own, to that
// column: the sources fingerprinted per partition.
func (f *Flow) partitionSources() map[string]string {
	refs := map[string]int{}
	for _, t := range f.Query.References {
		refs[tableName(t)]++
	}
	exposed := map[string]map[int]bool{} // table -> offsets of its exposed references
	columns := map[string]map[string]bool{}
	if l := f.Query.Lineage(f.PartitionBy); l.Found && !l.FromStar {
		for _, x := range l.Exposed {
			name := tableName(x.Table)
			if exposed[name] == nil {
				exposed[name], columns[name] = map[int]bool{}, map[string]bool{}
			}
			exposed[name][x.Table.Offset] = true
			columns[name][x.Column] = true
		}
	}
	out := map[string]string{}
	for name, cols := range columns {
		if len(exposed[name]) == refs[name] && len(cols) == 1 {
			for c := range cols {
				out[name] = c
			}
		}
	}
	return out
}

// TargetProbe fingerprints the target within the union of windows (the
// first: the window now), to
// find DML that rwc did not make (EXTERNAL_CHANGE_IN_REPLACE_WINDOW). Its
// fourth column counts each partition's rows inserted by transaction writer
// (0: none asked): the rows of a window that a refresh rewrote whole are
// recognised by their xmin, which PostgreSQL keeps even when it freezes them.
//
// On a target that Citus distributes (obs.Distributed), the rows are on the
// workers, inserted by transactions of theirs: writer is 0, and the version
// hash reads xmin as such (distributedVersionHash).
func (f *Flow) TargetProbe(windows []*predicate.Predicate, writer uint32, obs Observation) (Probe, error) {
	col := "s." + pq.QuoteIdentifier(f.PartitionBy)
	conds := make([]string, len(windows))
	for i, w := range windows {
		cond, err := w.SQL(func(c string) string { return "s." + pq.QuoteIdentifier(c) })
		if err != nil {
			return Probe{}, err
		}
		conds[i] = "(" + cond + ")"
	}
	byWriter := "0::bigint"
	if writer != 0 {
		byWriter = fmt.Sprintf("count(*) FILTER (WHERE s.xmin = '%d'::xid)", writer)
	}
	// The fifth column: whether the partition lies in the first window (the
	// window now), as PostgreSQL decides it, for rows probed because they
	// lie in another. The predicate reads the partition column only (see
	// Incremental), which the query groups by.
	dist := f.TargetDistributed(obs)
	return Probe{Table: f.Target(), Distributed: dist, SQL: fmt.Sprintf(
		"SELECT (%s)::text, count(*), %s, %s, coalesce(%s, false) FROM %s AS s WHERE %s GROUP BY %[1]s",
		col, hashOf(dist), byWriter, conds[0], f.Target(), strings.Join(conds, " OR "))}, nil
}

// TargetDistributed reports whether Citus distributes f's target (obs).
func (f *Flow) TargetDistributed(obs Observation) bool {
	return slices.Contains(obs.Distributed, f.Target())
}

// Narrow is the window restricted to the given partition values (as
// PostgreSQL prints them): the predicate an incremental refresh runs with,
// so that push-down and BY NAME work exactly as for a full window. Past
// maxIncrementalPartitions values it is the window restricted to the range
// from the least to the greatest of them instead: recomputing an unchanged
// partition in between costs time, never correctness.
func (f *Flow) Narrow(window *predicate.Predicate, values []string) (*predicate.Predicate, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("no partition values")
	}
	family := f.Table.Column(f.PartitionBy).Type.Family
	lits := make([]string, len(values))
	keys := make([]any, len(values)) // each value in the column type's order
	for i, v := range values {
		switch family {
		case pgtype.Date:
			d, err := predicate.ParseDate(v)
			if err != nil {
				return nil, err
			}
			lits[i], keys[i] = "date('"+d.String()+"')", int64(d)
		case pgtype.Int:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			lits[i], keys[i] = strconv.FormatInt(n, 10), n
		default:
			if !utf8.ValidString(v) {
				// CEL would read it back as another string: recompute the
				// whole window rather than miss this partition.
				return nil, fmt.Errorf("partition value %q is not valid UTF-8", v)
			}
			lits[i], keys[i] = strconv.Quote(v), v // byte order, as CEL and COLLATE "C" compare
		}
	}
	var text string
	if len(values) > maxIncrementalPartitions {
		lo, hi := 0, 0
		for i := range keys {
			if less(keys[i], keys[lo]) {
				lo = i
			}
			if less(keys[hi], keys[i]) {
				hi = i
			}
		}
		text = "(" + window.Root.CEL() + ") && " + f.PartitionBy + " >= " + lits[lo] + " && " + f.PartitionBy + " <= " + lits[hi]
	} else {
		text = "(" + window.Root.CEL() + ") && " + f.PartitionBy + " in [" + strings.Join(lits, ", ") + "]"
	}
	p, issues := f.CompilePredicate(text)
	if len(issues) > 0 {
		return nil, fmt.Errorf("narrowed window %q: %s", text, issues[0].Message)
	}
	return p, nil
}

func quoteTable(t query.TableRef) string {
	if t.Schema != "" {
		return pq.QuoteIdentifier(t.Schema) + "." + pq.QuoteIdentifier(t.Name)
	}
	return pq.QuoteIdentifier(t.Name)
}

func less(a, b any) bool {
	switch x := a.(type) {
	case int64:
		return x < b.(int64)
	case string:
		return x < b.(string)
	}
	return false
}

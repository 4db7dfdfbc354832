package compile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// A Probe fingerprints one source (or the target) at refresh time: per
// partition value, the number of row versions and a sum of hashes of their
// physical identity (ctid and xmin). Any insert, update or delete changes a
// version's identity, so a changed fingerprint means changed rows; a
// rewrite (VACUUM FULL, CLUSTER) changes it too, which only costs a
// needless recompute. Reading system columns avoids detoasting rows, and
// because probes read the data itself there is no blind spot: TRUNCATE,
// disabled triggers, partition DDL and a recreated table all show.
type Probe struct {
	Source string // "schema.table" as the query names it; "" for the target
	// Whole: the source does not expose the partition column, so it is
	// fingerprinted as a whole (one row with a NULL partition value).
	Whole bool
	SQL   string
}

// maxIncrementalPartitions bounds the partitions an incremental refresh
// recomputes by listing them; past it a full window recompute is cheaper.
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

// Probes returns the fingerprint queries of f's sources for a window.
func (f *Flow) Probes(window *predicate.Predicate) ([]Probe, error) {
	exposing := map[string]query.PushTarget{}
	for _, t := range f.Query.Pushable([]string{f.PartitionBy}) {
		name := tableName(t.Table)
		if _, seen := exposing[name]; !seen {
			exposing[name] = t
		}
	}
	var out []Probe
	seen := map[string]bool{}
	for _, t := range f.Query.Tables {
		name := tableName(t)
		if seen[name] {
			continue
		}
		seen[name] = true
		from := quoteTable(t) + " AS s"
		if pt, ok := exposing[name]; ok {
			col := pt.Refs[f.PartitionBy]
			col = "s." + col[strings.LastIndexByte(col, '.')+1:]
			cond, err := window.SQL(func(string) string { return col })
			if err != nil {
				return nil, err
			}
			out = append(out, Probe{Source: name, SQL: fmt.Sprintf(
				"SELECT (%s)::text, count(*), coalesce(sum(hashtext(s.ctid::text || ':' || s.xmin::text)), 0) FROM %s WHERE %s GROUP BY 1",
				col, from, cond)})
			continue
		}
		out = append(out, Probe{Source: name, Whole: true, SQL: fmt.Sprintf(
			"SELECT NULL::text, count(*), coalesce(sum(hashtext(s.ctid::text || ':' || s.xmin::text)), 0) FROM %s", from)})
	}
	return out, nil
}

// TargetProbe fingerprints the target's window, to find DML that rwc did
// not make (EXTERNAL_CHANGE_IN_REPLACE_WINDOW).
func (f *Flow) TargetProbe(window *predicate.Predicate) (Probe, error) {
	col := "s." + pq.QuoteIdentifier(f.PartitionBy)
	cond, err := window.SQL(func(c string) string { return "s." + pq.QuoteIdentifier(c) })
	if err != nil {
		return Probe{}, err
	}
	return Probe{SQL: fmt.Sprintf(
		"SELECT (%s)::text, count(*), coalesce(sum(hashtext(s.ctid::text || ':' || s.xmin::text)), 0) FROM %s AS s WHERE %s GROUP BY 1",
		col, f.Target(), cond)}, nil
}

// Narrow is the window restricted to the given partition values (as
// PostgreSQL prints them): the predicate an incremental refresh runs with,
// so that push-down and BY NAME work exactly as for a full window.
func (f *Flow) Narrow(window *predicate.Predicate, values []string) (*predicate.Predicate, error) {
	if len(values) > maxIncrementalPartitions {
		return nil, fmt.Errorf("%d partitions changed: more than %d", len(values), maxIncrementalPartitions)
	}
	lits := make([]string, len(values))
	for i, v := range values {
		switch f.Table.Column(f.PartitionBy).Type.Family {
		case pgtype.Date:
			lits[i] = "date('" + v + "')"
		case pgtype.Int:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return nil, err
			}
			lits[i] = v
		default:
			lits[i] = strconv.Quote(v)
		}
	}
	text := "(" + window.Root.CEL() + ") && " + f.PartitionBy + " in [" + strings.Join(lits, ", ") + "]"
	p, issues := predicate.Compile(text, predicateColumns(f.Table))
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

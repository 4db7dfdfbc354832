package compile

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Expectation is one of a flow's expectations, compiled.
type Expectation struct {
	*spec.Expectation
	// Check is check:'s predicate (nil for the other kinds, and when it
	// has errors).
	Check *predicate.Predicate
	// NotNull: a check that is a test for NULL (check: price != null),
	// which the predicate language has no words for, checks as not_null.
	NotNull []string
}

// nullTest is a check that is "col != null" (or "null != col") alone.
var nullTest = regexp.MustCompile(`^\s*(?:([a-z_][a-z0-9_]*)\s*!=\s*null|null\s*!=\s*([a-z_][a-z0-9_]*))\s*$`)

// checkHints rewords, for a check, the predicate errors about NULL, whose
// hints speak of windows.
func checkHints(ds diag.List, text string) diag.List {
	if !strings.Contains(strings.ToLower(text), "null") {
		return ds
	}
	for i := range ds {
		ds[i].Hint = "a check cannot test for NULL inside an expression (a row where it is NULL passes it); write the test as its own expectation, not_null: [column], or check: column != null alone"
	}
	return ds
}

// MaxSamples is how many failing rows (or keys, or partitions) a failure
// shows.
const MaxSamples = 5

// MaxSampleValue bounds a value in a sample row (a document in a jsonb
// column would drown the failure). The server cuts it, one character more
// to say it was cut: five rows of a bytea of a gigabyte each are not
// fetched whole.
const MaxSampleValue = 120

// sampleValue is a column of a sample query: its value as text, cut.
func sampleValue(ref string) string {
	return fmt.Sprintf("left((%s)::text, %d)", ref, MaxSampleValue+1)
}

// analyzeExpectations compiles f's expectations; a check with errors is
// left without its predicate, and the refresh refuses the flow.
func (f *Flow) analyzeExpectations() diag.List {
	var ds diag.List
	for _, se := range f.Table.Expect {
		e := &Expectation{Expectation: se}
		f.Expectations = append(f.Expectations, e)
		if se.Kind != spec.ExpectCheck {
			continue
		}
		if col := nullTest.FindStringSubmatch(se.Check.Value); col != nil && f.Table.Column(col[1]+col[2]) != nil {
			e.NotNull = []string{col[1] + col[2]}
			continue
		}
		p, pd := compilePredicate(se.Check, f.Table)
		ds = append(ds, checkHints(pd, se.Check.Value)...)
		if p != nil && p.Determinism == predicate.NonDeterministic {
			ds.Errorf("RW215", se.Check.Pos, "check the rows' own values, e.g. qty >= 0",
				"expectation %s uses rand(): a check must give the same answer for the same row, in Go and in PostgreSQL", se.Name)
			continue
		}
		e.Check = p
	}
	return ds
}

// Checks is the SQL that checks a flow's expectations on the rows one
// refresh wrote, inside its transaction, before it commits: what a plan
// shows and what the refresh sends (run's expect step).
type Checks struct {
	// Before counts, per value of the partition column, the rows the
	// write replaces, before it writes ("": no rows.max_change).
	Before string
	// Rows counts the rows written and, in the same pass, the failing rows
	// of every check and not_null expectation (RowsFor lists which, in
	// column order after the partition value and the row count), then
	// DistinctFor's counts; per partition value when Before is set or a
	// unique key holds the partition column.
	Rows    string
	RowsFor []int
	// Apart are the expectations counted by a query of their own (unique,
	// relationships): each returns one row, the failing rows' count.
	Apart []CheckQuery
	// DistinctFor are the unique expectations that Rows checks in its pass
	// (two counts each, after RowsFor's), with the query that counts the
	// failing rows, run only when the pass found a key repeated.
	DistinctFor []CheckQuery
	// Samples[i] fetches up to MaxSamples failing rows of expectation i,
	// run only when it fails ("": none to fetch, rows: says it all).
	Samples []string
}

// CheckQuery is one expectation's own query.
type CheckQuery struct {
	For int
	SQL string
}

// Counts is how many counts a row of Rows holds after its partition
// value.
func (c Checks) Counts() int { return 1 + len(c.RowsFor) + 2*len(c.DistinctFor) }

// Repeated are the queries of the unique expectations whose counts in
// rows (Rows' answer, by partition value) show a key repeated: they count
// the rows that share theirs.
func (c Checks) Repeated(rows map[string][]int64) []CheckQuery {
	var out []CheckQuery
	for j, q := range c.DistinctFor {
		at := 1 + len(c.RowsFor) + 2*j
		for _, row := range rows {
			if row[at] != row[at+1] {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// After is what a refresh always sends after its write, in order.
func (c Checks) After() []string {
	var out []string
	if c.Rows != "" {
		out = append(out, c.Rows)
	}
	for _, q := range c.Apart {
		out = append(out, q.SQL)
	}
	return out
}

// Within is w.List(), the refresh's last write, with the checks where the
// refresh sends them: after the write and before a partitioned target's
// swap (its LOCK and exchange), which the refresh makes only once they
// passed. Before goes before the first write.
func (c Checks) Within(w Statements) []string {
	var out []string
	list := w.List()
	at := len(list)
	if w.Lock != "" {
		for i, st := range list {
			if st == w.Lock {
				at = i
				break
			}
		}
	}
	out = append(out, list[:at]...)
	out = append(out, c.After()...)
	return append(out, list[at:]...)
}

// written is where the rows a refresh wrote are, for the checks: the
// target within the write's window, and a partitioned target's staging
// tables, which the refresh swaps in after the checks.
type written struct {
	rows  string // a SELECT of the rows written
	scope func(alias string) (string, error)
}

// writtenBy describes what s writes.
func (f *Flow) writtenBy(s Statements) (written, error) {
	p, issues := f.CompilePredicate(s.PredicateCEL)
	if len(issues) > 0 {
		return written{}, fmt.Errorf("the refresh's window %s: %s", s.PredicateCEL, issues[0].Message)
	}
	var stages, ranges []string
	col := ""
	if f.Partitioned() {
		col = f.Table.Partitioning.By
	}
	rangeOf := func(alias string, sw Swap) string {
		c := alias + pq.QuoteIdentifier(col)
		return fmt.Sprintf("(%s >= DATE '%s' AND %s < DATE '%s')", c, sw.From, c, sw.To)
	}
	for _, sw := range s.Swaps {
		if len(sw.Exchange) > 0 {
			stages = append(stages, sw.Stage)
			ranges = append(ranges, rangeOf("", sw))
		}
	}
	scope := func(alias string) (string, error) {
		ref := predicate.QuotedColumn
		if alias != "" {
			ref = func(name string) string { return alias + pq.QuoteIdentifier(name) }
		}
		where, err := p.SQL(ref)
		if err != nil || len(ranges) == 0 {
			return where, err
		}
		var rs []string
		for _, sw := range s.Swaps {
			if len(sw.Exchange) > 0 {
				rs = append(rs, rangeOf(alias, sw))
			}
		}
		return "(" + where + ") OR " + strings.Join(rs, " OR "), nil
	}
	list := f.columnList()
	where, err := p.SQL(nil)
	if err != nil {
		return written{}, err
	}
	if len(stages) == 0 {
		return written{rows: fmt.Sprintf("SELECT %s FROM %s WHERE %s", list, f.Target(), where), scope: scope}, nil
	}
	parts := make([]string, 0, len(stages)+1)
	for _, st := range stages {
		parts = append(parts, fmt.Sprintf("SELECT %s FROM %s", list, st))
	}
	parts = append(parts, fmt.Sprintf("SELECT %s FROM %s WHERE (%s) AND NOT (%s)", list, f.Target(), where, strings.Join(ranges, " OR ")))
	return written{rows: strings.Join(parts, "\nUNION ALL\n"), scope: scope}, nil
}

// HasExpectations reports whether a refresh of f checks anything.
func (f *Flow) HasExpectations() bool { return len(f.Expectations) > 0 }

// Checks renders the checks of f's expectations on what s writes, with
// per-refresh functions resolved at rc. A refresh that writes nothing
// (an incremental refresh that found nothing changed) checks nothing.
func (f *Flow) Checks(s Statements, rc predicate.Resolution) (Checks, error) {
	if !f.HasExpectations() || (s.Delete == "" && s.Insert == "" && len(s.Swaps) == 0) {
		return Checks{}, nil
	}
	w, err := f.writtenBy(s)
	if err != nil {
		return Checks{}, err
	}
	return f.checksOn(w, rc, true)
}

// TestChecks renders the checks of f's expectations on the target as it
// is (rwc test): the rows where holds (nil: all of them). There is no
// write to compare with: rows.max_change is not checked.
func (f *Flow) TestChecks(where *predicate.Predicate, rc predicate.Resolution) (Checks, error) {
	if !f.HasExpectations() {
		return Checks{}, nil
	}
	cond := "TRUE"
	if where != nil {
		resolved, err := where.Resolve(rc)
		if err != nil {
			return Checks{}, err
		}
		if cond, err = resolved.SQL(nil); err != nil {
			return Checks{}, err
		}
	}
	scope := func(alias string) (string, error) {
		if where == nil {
			return "TRUE", nil
		}
		resolved, err := where.Resolve(rc)
		if err != nil {
			return "", err
		}
		return resolved.SQL(func(name string) string { return alias + pq.QuoteIdentifier(name) })
	}
	w := written{rows: fmt.Sprintf("SELECT %s FROM %s WHERE %s", f.columnList(), f.Target(), cond), scope: scope}
	return f.checksOn(w, rc, false)
}

// checksOn renders the checks on the rows w; compare: rows.max_change
// compares with the rows before a write.
func (f *Flow) checksOn(w written, rc predicate.Resolution, compare bool) (Checks, error) {
	c := Checks{Samples: make([]string, len(f.Expectations))}
	from := "(\n" + w.rows + "\n) AS w"
	by := f.groupBy(compare)
	// Grouped by the column itself, its text only in the output: a cast of
	// every row to text cost a third of the pass (docs/benchmarks.md).
	key, group := "NULL::text", ""
	if by != "" {
		key, group = "("+pq.QuoteIdentifier(by)+")::text", " GROUP BY "+pq.QuoteIdentifier(by)
	}
	counts := []string{key, "count(*)"}
	var distincts []string // after counts, in DistinctFor's order
	for i, e := range f.Expectations {
		switch e.Kind {
		case spec.ExpectCheck, spec.ExpectNotNull:
			bad, err := f.failing(e, rc)
			if err != nil {
				return Checks{}, err
			}
			counts = append(counts, "count(*) FILTER (WHERE "+bad+")")
			c.RowsFor = append(c.RowsFor, i)
			c.Samples[i] = f.sampleRows(from, bad)
		case spec.ExpectUnique:
			q, sample, err := f.uniqueSQL(e, from, w)
			if err != nil {
				return Checks{}, err
			}
			c.Samples[i] = sample
			if distinct := distinctWithin(e, by); distinct != nil {
				distincts = append(distincts, distinct...)
				c.DistinctFor = append(c.DistinctFor, CheckQuery{For: i, SQL: q})
				continue
			}
			c.Apart = append(c.Apart, CheckQuery{For: i, SQL: q})
		case spec.ExpectRelationships:
			q, sample := relationshipSQL(e, from)
			c.Apart = append(c.Apart, CheckQuery{For: i, SQL: q})
			c.Samples[i] = sample
		}
	}
	c.Rows = "SELECT " + strings.Join(append(counts, distincts...), ", ") + " FROM " + from + group
	if compare && f.comparesRows() {
		scope, err := w.scope("")
		if err != nil {
			return Checks{}, err
		}
		c.Before = fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s%s", key, f.Target(), scope, group)
	}
	return c, nil
}

// comparesRows reports whether a rows: expectation compares with the
// rows before the write (max_change).
func (f *Flow) comparesRows() bool {
	for _, e := range f.Expectations {
		if e.Kind == spec.ExpectRows && e.Rows.MaxChange > 0 {
			return true
		}
	}
	return false
}

// groupBy is the partition column the checks' pass counts by ("": one
// row for all): when rows.max_change compares partitions, or when a
// unique key holds the column, which turns the key's check into a count
// of distinct values per partition in the same pass (distinctWithin).
func (f *Flow) groupBy(compare bool) string {
	if f.PartitionBy == "" {
		return ""
	}
	if compare && f.comparesRows() {
		return f.PartitionBy
	}
	for _, e := range f.Expectations {
		if distinctWithin(e, f.PartitionBy) != nil {
			return f.PartitionBy
		}
	}
	return ""
}

// distinctWithin is, for a unique expectation whose key holds the
// partition column by (the pass groups by it), the two counts of the
// pass that tell whether the key repeats in a partition: the rows with
// the whole key, and their distinct values of the key's other columns.
// They differ only when a key repeats; the exact count of the rows that
// share theirs (Checks.DistinctFor's query) is read then only. A sort
// per partition of the rest of the key costs a fraction of a hash of the
// whole window's keys (docs/benchmarks.md). nil: not so for e.
func distinctWithin(e *Expectation, by string) []string {
	if e.Kind != spec.ExpectUnique || e.AcrossTable || by == "" {
		return nil
	}
	var rest, notNull []string
	has := false
	for _, c := range e.Columns.Columns {
		q := pq.QuoteIdentifier(c)
		notNull = append(notNull, q+" IS NOT NULL")
		if c == by {
			has = true
			continue
		}
		rest = append(rest, q)
	}
	if !has {
		return nil
	}
	value := pq.QuoteIdentifier(by)
	switch {
	case len(rest) == 1:
		value = rest[0]
	case len(rest) > 1:
		value = "ROW(" + strings.Join(rest, ", ") + ")"
	}
	filter := " FILTER (WHERE " + strings.Join(notNull, " AND ") + ")"
	return []string{"count(*)" + filter, "count(DISTINCT " + value + ")" + filter}
}

// failing is the SQL condition of a row that fails a check or not_null
// expectation. A check fails where it is false; where it is NULL (a NULL
// column) it passes, as in a CHECK constraint: not_null says otherwise.
func (f *Flow) failing(e *Expectation, rc predicate.Resolution) (string, error) {
	if cols := e.nullColumns(); cols != nil {
		conds := make([]string, len(cols))
		for i, c := range cols {
			conds[i] = pq.QuoteIdentifier(c) + " IS NULL"
		}
		return strings.Join(conds, " OR "), nil
	}
	if e.Check == nil {
		return "", fmt.Errorf("flow %s: expectation %s has lint errors; run rwc lint", f.Name(), e.Name)
	}
	p, err := e.Check.Resolve(rc)
	if err != nil {
		return "", err
	}
	sql, err := p.SQL(nil)
	if err != nil {
		return "", err
	}
	return predicate.ViolationSQL(sql), nil
}

// sampleRows fetches up to MaxSamples rows where bad holds, every column
// as text, in a stable order.
func (f *Flow) sampleRows(from, bad string) string {
	cols := make([]string, len(f.Table.Columns))
	order := make([]string, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		cols[i] = sampleValue(pq.QuoteIdentifier(c.Name))
		order[i] = fmt.Sprint(i + 1)
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d", strings.Join(cols, ", "), from, bad, strings.Join(order, ", "), MaxSamples)
}

// uniqueSQL counts the rows written that share their key with another
// row written, or (across_table) with a row of the target the refresh did
// not write. Rows with a NULL in the key are not compared, as in a UNIQUE
// constraint.
func (f *Flow) uniqueSQL(e *Expectation, from string, w written) (string, string, error) {
	cols := e.Columns.Columns
	quoted := make([]string, len(cols))
	notNull := make([]string, len(cols))
	text := make([]string, len(cols))
	join := make([]string, len(cols))
	for i, c := range cols {
		q := pq.QuoteIdentifier(c)
		quoted[i], notNull[i], text[i] = q, q+" IS NOT NULL", sampleValue(q)
		join[i] = "o." + q + " = w." + q
	}
	keys := strings.Join(quoted, ", ")
	// "#n": no column's name (an identifier), so no key column shadows it.
	dups := fmt.Sprintf(`SELECT %s, count(*) AS "#n" FROM %s WHERE %s GROUP BY %s HAVING count(*) > 1`, keys, from, strings.Join(notNull, " AND "), keys)
	q := fmt.Sprintf(`SELECT coalesce(sum("#n"), 0) FROM (%s) AS d`, dups)
	within := q
	sample := fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s GROUP BY %s HAVING count(*) > 1 ORDER BY count(*) DESC, %s LIMIT %d",
		strings.Join(text, ", "), from, strings.Join(notNull, " AND "), keys, keys, MaxSamples)
	if !e.AcrossTable {
		return q, sample, nil
	}
	scope, err := w.scope("o.")
	if err != nil {
		return "", "", err
	}
	clash := fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS o WHERE %s AND (%s) IS NOT TRUE)", f.Target(), strings.Join(join, " AND "), scope)
	q = fmt.Sprintf("SELECT (%s) + (SELECT count(*) FROM %s WHERE %s)", within, from, clash)
	sample = fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s AND (%s OR %s IN (SELECT %s FROM %s WHERE %s GROUP BY %s HAVING count(*) > 1)) GROUP BY %s ORDER BY %s LIMIT %d",
		strings.Join(text, ", "), from, strings.Join(notNull, " AND "), clash, "("+keys+")", keys, from, strings.Join(notNull, " AND "), keys, keys, keys, MaxSamples)
	return q, sample, nil
}

// relationshipSQL counts the rows written whose column's value the other
// table's column does not hold (NULL is no value: it passes, as in a
// foreign key).
func relationshipSQL(e *Expectation, from string) (string, string) {
	r := e.Rel
	c := "w." + pq.QuoteIdentifier(r.Column)
	to := pq.QuoteIdentifier(r.ToSchema) + "." + pq.QuoteIdentifier(r.ToTable)
	missing := fmt.Sprintf("%s IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s AS r WHERE r.%s = %s)", c, to, pq.QuoteIdentifier(r.ToColumn), c)
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", from, missing)
	sample := fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s GROUP BY %s ORDER BY count(*) DESC, %s LIMIT %d", sampleValue(c), from, missing, c, c, MaxSamples)
	return q, sample
}

// nullColumns are the columns a not_null expectation (or a check that is a
// test for NULL) refuses NULL in; nil for any other.
func (e *Expectation) nullColumns() []string {
	switch {
	case e.Kind == spec.ExpectNotNull:
		return e.Columns.Columns
	case e.NotNull != nil:
		return e.NotNull
	}
	return nil
}

package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

// pgTypeNames maps the driver's type names to rwc's canonical base names.
var pgTypeNames = map[string]string{
	"INT2": "smallint", "INT4": "integer", "INT8": "bigint", "NUMERIC": "numeric",
	"FLOAT4": "real", "FLOAT8": "double precision", "TEXT": "text", "VARCHAR": "character varying",
	"BPCHAR": "character", "BOOL": "boolean", "DATE": "date",
	"TIMESTAMP": "timestamp without time zone", "TIMESTAMPTZ": "timestamp with time zone",
}

// observe reads, in tx, what f's statements and its refresh's decision
// depend on (compile.Observation): the query's output types for the
// predicate's columns, against the target's (when one differs, a timestamp
// stored into a date column, the predicate means something else on the
// sources), what keeps its changes from being read from its sources' rows,
// and whether the target exists. It plans the query without running it.
func observe(ctx context.Context, tx *sql.Tx, f *compile.Flow) (compile.Observation, error) {
	var obs compile.Observation
	// The target's oid (0: missing) first, and whether the database has
	// Citus: what the refresh does with the table under its name
	// (compile.Flow.TargetVerdict) does not wait for the query to describe.
	var oid sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1)::oid, `+hasCitus, f.Target()).Scan(&oid, &obs.Citus); err != nil {
		return obs, err
	}
	obs.TargetOID, obs.TargetMissing = uint32(oid.Int64), !oid.Valid
	if obs.Citus {
		if err := observeDistribution(ctx, tx, f, &obs); err != nil {
			return obs, err
		}
	}
	types, err := describeQuery(ctx, tx, f.Query.Body, f.WindowTexts())
	if err != nil {
		return obs, err
	}
	obs.Collations = types.collations
	if f.Immediate() {
		if obs.Settings, err = maintainedSettings(ctx, tx); err != nil {
			return obs, err
		}
	}
	obs.Mismatches = mismatches(f, types.columns)
	if obs.JoinMismatches, err = joinMismatches(ctx, tx, f); err != nil {
		return obs, fmt.Errorf("reading the types of the columns the query joins the window's to: %s", serverWords(err))
	}
	if f.Incremental() && !obs.AfterQueryOnly() {
		if obs.Blocker, err = incrementalBlocker(ctx, tx, f); err != nil {
			return obs, err
		}
	}
	if obs.TargetMissing {
		return obs, nil
	}
	var stored []compile.WindowCollation
	obs.Lacks, stored, err = lacks(ctx, tx, f, obs.TargetOID)
	obs.Collations = append(obs.Collations, stored...)
	return obs, err
}

// mismatches lists the predicate's columns whose type in the query's
// output is not the target's.
func mismatches(f *compile.Flow, types []*sql.ColumnType) []compile.TypeMismatch {
	var out []compile.TypeMismatch
	for _, t := range types {
		col := f.Table.Column(t.Name())
		if col == nil || !slices.Contains(f.Predicate.Columns, t.Name()) {
			continue
		}
		query, cut := strings.ToLower(t.DatabaseTypeName()), truncates(t, col.Type)
		if cut {
			query = "a longer varchar, whose trailing spaces the INSERT cuts"
		}
		if cut || rounds(col.Type) || pgTypeNames[t.DatabaseTypeName()] != col.Type.Base {
			out = append(out, compile.TypeMismatch{Column: t.Name(), Query: query, Target: col.Type.Canonical})
		}
	}
	return out
}

// rounds: the target rounds what it stores to a precision of its own
// (numeric(p,s), timestamp(p)), which the query's value, as the pushed
// window reads it, need not have: 23:59:59.7 is outside a window from
// midnight on, and stored as midnight, inside it.
func rounds(target pgtype.Type) bool {
	switch target.Family {
	case pgtype.Numeric, pgtype.Timestamp, pgtype.TimestampTZ:
		return !target.Array && len(target.Modifiers()) > 0
	}
	return false
}

// truncates: the query yields a character varying that the target's
// does not hold whole (unbounded, or longer), which the INSERT cuts down
// to it when what is cut is spaces: the target's 'ab ' is the query's
// 'ab   ', another partition.
func truncates(t *sql.ColumnType, target pgtype.Type) bool {
	if target.Base != "character varying" || target.Array || t.DatabaseTypeName() != "VARCHAR" {
		return false
	}
	query := "character varying"
	if n, ok := t.Length(); ok && n >= 0 {
		query = fmt.Sprintf("character varying(%d)", n)
	}
	return query != target.Canonical && !pgtype.Widens(query, target.Canonical)
}

// lacks lists the flow's columns that its target (oid) does not have, and
// those of the window's text columns it stores under a nondeterministic
// collation.
func lacks(ctx context.Context, tx *sql.Tx, f *compile.Flow, oid uint32) ([]string, []compile.WindowCollation, error) {
	rows, err := tx.QueryContext(ctx, `SELECT a.attname, coalesce(quote_ident(c.collname), ''), coalesce(NOT c.collisdeterministic, false)
		FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, oid)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	has := map[string]bool{}
	var odd []compile.WindowCollation
	texts := f.WindowTexts()
	for rows.Next() {
		var name, coll string
		var nondeterministic bool
		if err := rows.Scan(&name, &coll, &nondeterministic); err != nil {
			return nil, nil, err
		}
		has[name] = true
		if nondeterministic && slices.Contains(texts, name) {
			odd = append(odd, compile.WindowCollation{Column: name, Collation: coll, Target: true})
		}
	}
	var out []string
	for _, c := range f.Table.Columns {
		if !has[c.Name] {
			out = append(out, c.Name)
		}
	}
	return out, odd, rows.Err()
}

// Observe is observe in a read-only snapshot of its own, bounded by
// timeout (0: LossCountTimeout): for a plan, and for the counts rwc apply
// makes before it changes anything.
func Observe(ctx context.Context, db *sql.DB, f *compile.Flow, timeout time.Duration) (compile.Observation, error) {
	tx, err := readOnly(ctx, db, timeout)
	if err != nil {
		return compile.Observation{}, err
	}
	defer tx.Rollback()
	obs, err := observe(ctx, tx, f)
	if err != nil && !isLockTimeout(err) {
		err = queryError(f, err)
		var qe *QueryError
		if errors.As(err, &qe) && qe.PG.Code == "42P01" {
			rel := ""
			if m := quotedName.FindStringSubmatch(qe.PG.Message); m != nil {
				rel = m[1]
			}
			err = &compile.MissingSource{Relation: rel, Pos: qe.Pos, Err: qe}
		}
	}
	if err == nil {
		err = observePartitions(ctx, tx, obs.TargetOID, &obs)
	}
	if err == nil && !obs.TargetMissing {
		// What the plan compares the spec's indexes with (the refresh reads
		// them before its transaction: Runner.syncIndexes).
		_, obs.Indexes, err = targetIndexes(ctx, tx, f.Target())
		obs.IndexesRead = err == nil
	}
	return obs, err
}

// described is what describeQuery reads of a query: its output columns,
// and those of the given text columns it yields under a nondeterministic
// collation.
type described struct {
	columns    []*sql.ColumnType
	collations []compile.WindowCollation
}

// describeQuery returns the output columns the server makes of a user's
// query (its analysis's Body), as rwc embeds it, and the collations of
// texts among them that are nondeterministic. It plans the query in a savepoint, whose rollback
// releases the locks planning took on the sources: a refresh that finds
// nothing changed need not hold them until it commits.
func describeQuery(ctx context.Context, tx *sql.Tx, query string, texts []string) (described, error) {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT rwc_describe"); err != nil {
		return described{}, err
	}
	d, err := describeIn(ctx, tx, query, texts)
	if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT rwc_describe; RELEASE SAVEPOINT rwc_describe"); err == nil {
		err = rerr
	}
	return d, err
}

// describeIn plans the query once for both: its columns are those of
// the one NULL row that an outer join to its no rows makes, followed by
// one column a text, the collation pg_collation_for reads of the
// expression when it is nondeterministic (else NULL).
func describeIn(ctx context.Context, tx *sql.Tx, body string, texts []string) (described, error) {
	stmt := "SELECT * FROM (\n" + body + "\n) AS src LIMIT 0"
	if len(texts) > 0 {
		extra := make([]string, len(texts))
		for i, c := range texts {
			// Read as text: a type without collations (an enum, an integer
			// the spec declares text) makes pg_collation_for fail; a text or
			// varchar keeps its own.
			coll := "pg_collation_for((x." + pq.QuoteIdentifier(c) + ")::text)"
			extra[i] = "(SELECT " + coll + " FROM pg_collation c WHERE c.oid = to_regcollation(" + coll + ") AND NOT c.collisdeterministic)"
		}
		stmt = "SELECT x.*, " + strings.Join(extra, ", ") + " FROM (SELECT) AS one LEFT JOIN (SELECT * FROM (\n" + body + "\n) AS src LIMIT 0) AS x ON true"
	}
	rows, done, err := userRows(ctx, tx, stmt)
	if err != nil {
		return described{}, err
	}
	defer done()
	types, err := rows.ColumnTypes()
	if err != nil || len(texts) == 0 {
		return described{columns: types}, err
	}
	d := described{columns: types[:len(types)-len(texts)]}
	dest := make([]any, len(types))
	raw := make([]sql.NullString, len(texts))
	for i := range dest {
		dest[i] = new(any)
		if j := i - len(d.columns); j >= 0 {
			dest[i] = &raw[j]
		}
	}
	if rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return d, err
		}
	}
	for i, r := range raw {
		if r.Valid {
			d.collations = append(d.collations, compile.WindowCollation{Column: texts[i], Collation: r.String})
		}
	}
	return d, rows.Err()
}

// joinMismatches lists the flow's JoinedColumns whose type or collation
// keeps the window from being pushed onto them (compile.JoinMismatch).
func joinMismatches(ctx context.Context, tx *sql.Tx, f *compile.Flow) ([]compile.JoinMismatch, error) {
	joined := f.JoinedColumns()
	if len(joined) == 0 {
		return nil, nil
	}
	rels, atts := make([]string, len(joined)), make([]string, len(joined))
	for i, j := range joined {
		rels[i], atts[i] = j.Table, j.Source
	}
	// A domain is read as the type it is over (a domain over a domain is
	// not one of the window's types: the window is not pushed onto it).
	rows, err := tx.QueryContext(ctx, `SELECT j.n, format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END, NULL),
			coalesce(quote_ident(c.collname), ''), coalesce(NOT c.collisdeterministic, false)
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS j(rel, att, n)
		JOIN pg_attribute a ON a.attrelid = to_regclass(j.rel) AND a.attname = j.att AND a.attnum > 0 AND NOT a.attisdropped
		JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_collation c ON c.oid = a.attcollation ORDER BY 1`, pq.Array(rels), pq.Array(atts))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var odd []compile.JoinMismatch
	read := make([]bool, len(joined))
	for rows.Next() {
		var n int
		var typ, coll string
		var nondeterministic bool
		if err := rows.Scan(&n, &typ, &coll, &nondeterministic); err != nil {
			return nil, err
		}
		read[n-1] = true
		if m, ok := joined[n-1].Mismatched(typ, coll, nondeterministic); ok {
			odd = append(odd, m)
		}
	}
	// One whose column could not be read is not vouched for.
	for i, ok := range read {
		if !ok {
			m, _ := joined[i].Mismatched("a type rwc could not read", "", false)
			odd = append(odd, m)
		}
	}
	return odd, rows.Err()
}

// incrementalBlocker says why a flow's changes cannot be read from its
// sources' rows ("" when they can): the query reads the clock or the
// session, calls a function in FROM, or calls a function that is not
// immutable (a lookup function reading another table changes results
// without any source row changing), or its predicate is not pushed down.
func incrementalBlocker(ctx context.Context, tx *sql.Tx, f *compile.Flow) (string, error) {
	rels := make([]string, len(f.Query.Tables))
	for i, t := range f.Query.Tables {
		rels[i] = pq.QuoteIdentifier(t.Name)
		if t.Schema != "" {
			rels[i] = pq.QuoteIdentifier(t.Schema) + "." + rels[i]
		}
	}
	// Every member of a source's partition tree or inheritance hierarchy
	// must be a plain table (or a materialised view): a view has no row
	// identity to fingerprint, and a foreign table's (ctid, xmin) say
	// nothing about remote changes. One query for all the sources; the
	// trees are walked only when a source has (or had) children, which
	// most do not: planning the walk costs more than the rest of it.
	var bad sql.NullString
	var parents bool
	err := tx.QueryRowContext(ctx, `SELECT min(rel) FILTER (WHERE c.relkind NOT IN ('r', 'p', 'm')), coalesce(bool_or(c.relhassubclass), false)
		FROM unnest($1::text[]) rel JOIN pg_class c ON c.oid = to_regclass(rel)::oid`, pq.Array(rels)).Scan(&bad, &parents)
	if err == nil && !bad.Valid && parents {
		err = tx.QueryRowContext(ctx, `WITH RECURSIVE tree(rel, oid) AS (
				SELECT rel, to_regclass(rel)::oid FROM unnest($1::text[]) rel
				UNION SELECT tree.rel, i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid)
			SELECT min(tree.rel) FROM tree JOIN pg_class c ON c.oid = tree.oid WHERE c.relkind NOT IN ('r', 'p', 'm')`,
			pq.Array(rels)).Scan(&bad)
	}
	if err != nil {
		return "", err
	}
	if bad.Valid {
		return fmt.Sprintf("source %s is (or has a member that is) a view or a foreign table, whose changes rwc cannot see", bad.String), nil
	}
	deps := f.Query.Dependencies()
	switch {
	case deps.Session:
		return "the query reads the clock or the session (CURRENT_DATE, CURRENT_USER, …)", nil
	case deps.FromFunction:
		return "the query calls a function in FROM", nil
	}
	if len(deps.Functions) == 0 {
		return "", nil
	}
	names := make([]string, len(deps.Functions))
	for i, fn := range deps.Functions {
		names[i] = fn.Name
	}
	err = tx.QueryRowContext(ctx, `SELECT string_agg(DISTINCT proname, ', ') FROM pg_proc WHERE proname = ANY($1) AND provolatile <> 'i'`,
		pq.Array(names)).Scan(&bad)
	if err != nil {
		return "", err
	}
	if bad.Valid && bad.String != "" {
		return "the query calls functions that are not immutable (" + bad.String + ")", nil
	}
	return "", nil
}

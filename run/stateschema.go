package run

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"
)

// The state schema as rwc relies on it: every table, column, key and index
// that the migrations create, with the version that added it. Migrate
// checks the database against it before it trusts the version number (a
// table dropped by hand, a version lowered), and rwc state repair creates
// what is missing from it. TestStateSchemaMatchesMigrations keeps it equal
// to what the migrations build.

// stateColumn is one column of a state table. typ is as format_type prints
// it; def is its default as SQL ("" none; serial: a sequence's nextval).
type stateColumn struct {
	name, typ string
	notNull   bool
	def       string
	serial    bool
	since     int // 0: the table's version
}

// stateKey is a key or an index rwc relies on: kind "primary key", "unique",
// "index" (a lookup: any index leading with cols) or "foreign key" (to ref,
// ON DELETE CASCADE).
type stateKey struct {
	kind string
	cols []string
	ref  string
}

type stateTable struct {
	name    string
	since   int
	what    string // what rwc keeps in it, for a finding
	columns []stateColumn
	keys    []stateKey
}

var stateSchema = []stateTable{
	{name: "schema_version", since: 0, what: "the state schema's version",
		columns: []stateColumn{{name: "version", typ: "integer", notNull: true}}},
	{name: "deployments", since: 1, what: "the deployments and a snapshot of every deployed spec",
		columns: []stateColumn{
			{name: "id", typ: "bigint", notNull: true, serial: true},
			{name: "commit", typ: "text"},
			{name: "dirty", typ: "boolean", notNull: true, def: "false"},
			{name: "deployed_at", typ: "timestamp with time zone", notNull: true, def: "clock_timestamp()"},
			{name: "deployed_by", typ: "text", notNull: true},
			{name: "specs", typ: "jsonb", notNull: true},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"id"}}}},
	{name: "flows", since: 1, what: "each flow's target and last refresh",
		columns: []stateColumn{
			{name: "flow", typ: "text", notNull: true},
			{name: "pipeline", typ: "text", notNull: true},
			{name: "target_schema", typ: "text", notNull: true},
			{name: "target_table", typ: "text", notNull: true},
			{name: "target_oid", typ: "oid", notNull: true},
			{name: "columns", typ: "jsonb", notNull: true},
			{name: "query_fingerprint", typ: "text", notNull: true},
			{name: "predicate_cel", typ: "text"},
			{name: "predicate_sql", typ: "text"},
			{name: "env_version", typ: "integer"},
			{name: "determinism", typ: "text"},
			{name: "last_refresh_at", typ: "timestamp with time zone"},
			{name: "created_at", typ: "timestamp with time zone", notNull: true, def: "clock_timestamp()"},
			{name: "dead_rows", typ: "bigint", notNull: true, def: "0", since: 4},
			{name: "vacuums", typ: "bigint", notNull: true, def: "0", since: 4},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"flow"}}, {kind: "unique", cols: []string{"target_schema", "target_table"}}}},
	{name: "events", since: 1, what: "the event log (one record per refresh)",
		columns: []stateColumn{
			{name: "id", typ: "bigint", notNull: true, serial: true},
			{name: "flow", typ: "text", notNull: true},
			{name: "kind", typ: "text", notNull: true, def: "'planning_information'"},
			{name: "action", typ: "text", notNull: true},
			{name: "reasons", typ: "text[]", notNull: true, def: "'{}'"},
			{name: "predicate_cel", typ: "text"},
			{name: "predicate_sql", typ: "text"},
			{name: "rows_deleted", typ: "bigint"},
			{name: "rows_inserted", typ: "bigint"},
			{name: "started_at", typ: "timestamp with time zone", notNull: true},
			{name: "duration_ms", typ: "bigint", notNull: true},
			{name: "error", typ: "text"},
			{name: "details", typ: "jsonb", notNull: true, def: "'{}'"},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"id"}}, {kind: "index", cols: []string{"flow", "id"}}}},
	{name: "fingerprints", since: 2, what: "the fingerprints incremental refreshes compare with",
		columns: []stateColumn{
			{name: "flow", typ: "text", notNull: true},
			{name: "source", typ: "text", notNull: true},
			{name: "whole", typ: "boolean", notNull: true},
			{name: "value", typ: "text", notNull: true},
			{name: "n", typ: "bigint", notNull: true},
			{name: "h", typ: "bigint", notNull: true},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"flow", "source", "whole", "value"}}}},
	{name: "backfills", since: 3, what: "the ledger of applied backfill files",
		columns: []stateColumn{
			{name: "path", typ: "text", notNull: true},
			{name: "content_hash", typ: "text", notNull: true},
			{name: "flow", typ: "text", notNull: true},
			{name: "reason", typ: "text", notNull: true},
			{name: "commit", typ: "text"},
			{name: "rows_deleted", typ: "bigint", notNull: true, def: "0"},
			{name: "rows_inserted", typ: "bigint", notNull: true, def: "0"},
			{name: "started_at", typ: "timestamp with time zone", notNull: true, def: "clock_timestamp()"},
			{name: "finished_at", typ: "timestamp with time zone"},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"path"}}}},
	{name: "backfill_batches", since: 3, what: "the committed batches of each backfill file",
		columns: []stateColumn{
			{name: "path", typ: "text", notNull: true},
			{name: "batch", typ: "integer", notNull: true},
			{name: "predicate_cel", typ: "text", notNull: true},
			{name: "rows_deleted", typ: "bigint"},
			{name: "rows_inserted", typ: "bigint"},
			{name: "committed_at", typ: "timestamp with time zone"},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"path", "batch"}}, {kind: "foreign key", cols: []string{"path"}, ref: "backfills"}}},
	{name: "expectation_results", since: 6, what: "the last result of each expectation",
		columns: []stateColumn{
			{name: "flow", typ: "text", notNull: true},
			{name: "name", typ: "text", notNull: true},
			{name: "kind", typ: "text", notNull: true},
			{name: "severity", typ: "text", notNull: true},
			{name: "at", typ: "text", notNull: true},
			{name: "passed", typ: "boolean", notNull: true},
			{name: "failing", typ: "bigint", notNull: true},
			{name: "checked_rows", typ: "bigint", notNull: true},
			{name: "message", typ: "text", notNull: true},
			{name: "samples", typ: "text[]", notNull: true, def: "'{}'"},
			{name: "outcome", typ: "text", notNull: true},
			{name: "checked_at", typ: "timestamp with time zone", notNull: true},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"flow", "name"}}}},
	{name: "change_log", since: 7, what: "which tables with rwc's capture trigger changed, by transaction",
		columns: []stateColumn{
			{name: "relid", typ: "oid", notNull: true},
			{name: "xid", typ: "xid8", notNull: true},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"relid", "xid"}}}},
	{name: "captures", since: 7, what: "what the last refresh of each flow capturing by triggers saw of its tables",
		columns: []stateColumn{
			{name: "flow", typ: "text", notNull: true},
			{name: "relid", typ: "oid", notNull: true},
			{name: "relation", typ: "text", notNull: true},
			{name: "token", typ: "text", notNull: true},
			{name: "snapshot", typ: "pg_snapshot", notNull: true},
			{name: "writer", typ: "xid8"},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"flow", "relid"}}}},
	{name: "change_values", since: 8, what: "which partition values of tables with rwc's value triggers changed, by transaction",
		columns: []stateColumn{
			{name: "relid", typ: "oid", notNull: true},
			{name: "xid", typ: "xid8", notNull: true},
			{name: "attnum", typ: "smallint", notNull: true},
			{name: "value", typ: "text", notNull: true},
		},
		keys: []stateKey{{kind: "primary key", cols: []string{"relid", "xid", "attnum", "value"}}}},
}

// flowIdentity are the columns of rwc.flows that say which table a flow's
// target is: a row without them cannot be trusted to name rwc's table.
var flowIdentity = []string{"flow", "pipeline", "target_schema", "target_table", "target_oid", "columns"}

func (c stateColumn) version(t stateTable) int { return max(c.since, t.since) }

// catalog is what the database has of schema rwc.
type catalog struct {
	schema  bool                             // schema rwc exists
	tables  map[string]map[string]catalogCol // table → column → column
	indexes map[string][]catalogIndex        // table → its indexes and foreign keys
}

type catalogCol struct {
	typ     string
	notNull bool
	hasDef  bool
}

type catalogIndex struct {
	kind string // "primary key", "unique", "index" or "foreign key"
	cols []string
	ref  string
}

// readCatalog describes schema rwc from pg_catalog: it takes no lock on the
// state tables and needs no privilege on them. One statement, in one round
// trip, and cheap to plan in a new session, where it is often the first to
// read the catalog: a row if the schema exists, the columns of its tables,
// then their keys and indexes by column number, which the columns name.
func readCatalog(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (*catalog, error) {
	rows, err := q.QueryContext(ctx, catalogQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &catalog{tables: map[string]map[string]catalogCol{}, indexes: map[string][]catalogIndex{}}
	names := map[string]map[int64]string{} // table → column number → name
	type key struct {
		table string
		ix    catalogIndex
		nums  []int64
	}
	var keys []key
	for rows.Next() {
		var row int
		var table, col, ref sql.NullString
		var cc catalogCol
		var nums []int64
		if err := rows.Scan(&row, &table, &col, &cc.typ, &cc.notNull, &cc.hasDef, pq.Array(&nums), &ref); err != nil {
			return nil, err
		}
		switch row {
		case catalogSchema:
			c.schema = true
		case catalogColumn:
			if c.tables[table.String] == nil {
				c.tables[table.String], names[table.String] = map[string]catalogCol{}, map[int64]string{}
			}
			if col.String != "" { // a table without columns has a row too
				c.tables[table.String][col.String] = cc
				names[table.String][nums[0]] = col.String
			}
		default:
			keys = append(keys, key{table.String, catalogIndex{kind: cc.typ, ref: ref.String}, nums})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, k := range keys {
		for _, n := range k.nums {
			if name, ok := names[k.table][n]; ok {
				k.ix.cols = append(k.ix.cols, name)
			}
		}
		c.indexes[k.table] = append(c.indexes[k.table], k.ix)
	}
	return c, nil
}

// The rows of catalogQuery, by its first column: the schema's, a column's
// (its number in the array; a table without columns has one with none), a
// key's or an index's (its kind where a column's type goes, its columns'
// numbers in the array, a foreign key's referenced table last).
const (
	catalogSchema = iota
	catalogColumn
	catalogKey
)

// catalogQuery is readCatalog's statement. The keys and indexes are those
// of the schema's tables and columns (r, p: another relation of a state
// table's name is a missing table), so the columns can name their columns.
// (An index's column numbers, an int2vector, count from 0: sliced, they
// are an ordinary array.)
const catalogQuery = `SELECT 0, n.nspname, ''::name, ''::text, false, false, NULL::int2[], NULL::name
		FROM pg_namespace n WHERE n.nspname = 'rwc'
	UNION ALL
	SELECT 1, c.relname, coalesce(a.attname, ''), coalesce(format_type(a.atttypid, a.atttypmod), ''),
			coalesce(a.attnotnull, false), coalesce(a.atthasdef, false), ARRAY[coalesce(a.attnum, 0)], NULL
		FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relnamespace = to_regnamespace('rwc') AND c.relkind IN ('r', 'p')
	UNION ALL
	SELECT 2, t.relname, NULL, CASE WHEN i.indisprimary THEN 'primary key' WHEN i.indisunique THEN 'unique' ELSE 'index' END,
			false, false, (i.indkey::int2[])[0:], NULL
		FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
		WHERE t.relnamespace = to_regnamespace('rwc') AND t.relkind IN ('r', 'p') AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
	UNION ALL
	SELECT 2, t.relname, NULL, 'foreign key', false, false, k.conkey, r.relname
		FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
		WHERE t.relnamespace = to_regnamespace('rwc') AND r.relnamespace = to_regnamespace('rwc')
			AND k.contype = 'f' AND k.confdeltype = 'c' AND k.convalidated`

// has reports whether the catalog has key k on table t.
func (c *catalog) has(t string, k stateKey) bool {
	for _, ix := range c.indexes[t] {
		switch k.kind {
		case "primary key", "unique":
			// A unique index serves what a UNIQUE constraint does (ON
			// CONFLICT, lookups); a primary key also says NOT NULL, which
			// the columns say too.
			if (ix.kind == k.kind || k.kind == "unique" && ix.kind == "primary key") && slices.Equal(ix.cols, k.cols) {
				return true
			}
		case "index":
			if ix.kind != "foreign key" && len(ix.cols) >= len(k.cols) && slices.Equal(ix.cols[:len(k.cols)], k.cols) {
				return true
			}
		case "foreign key":
			if ix.kind == "foreign key" && ix.ref == k.ref && slices.Equal(ix.cols, k.cols) {
				return true
			}
		}
	}
	return false
}

// hasStateTables reports whether schema rwc has any of rwc's tables but
// schema_version: a state, whatever its version says.
func (c *catalog) hasStateTables() bool {
	for _, t := range stateSchema {
		if _, ok := c.tables[t.name]; ok && t.name != "schema_version" {
			return true
		}
	}
	return false
}

// schemaProblem is one difference between the database and the state
// schema of some version.
type schemaProblem struct {
	code   string // missing_table, missing_column, wrong_column, missing_key, newer_object
	object string // rwc.events, rwc.flows.target_oid
	text   string // what is wrong, in rwc's words
	table  string
	column string
}

// schemaProblems compares the catalog with the state schema of version v:
// what it lacks, what differs, and what only a later version has (which
// says the version number is wrong, not that the state is old).
func (c *catalog) schemaProblems(v int) []schemaProblem {
	var out []schemaProblem
	for _, t := range stateSchema {
		have, ok := c.tables[t.name]
		if t.since > v {
			if ok && t.name != "schema_version" {
				out = append(out, schemaProblem{code: "newer_object", object: "rwc." + t.name, table: t.name,
					text: fmt.Sprintf("table rwc.%s exists, which only version %d of the state has", t.name, t.since)})
			}
			continue
		}
		if !ok {
			out = append(out, schemaProblem{code: "missing_table", object: "rwc." + t.name, table: t.name,
				text: fmt.Sprintf("table rwc.%s (%s) is missing", t.name, t.what)})
			continue
		}
		for _, col := range t.columns {
			obj := "rwc." + t.name + "." + col.name
			got, ok := have[col.name]
			switch {
			case col.version(t) > v:
				if ok {
					out = append(out, schemaProblem{code: "newer_object", object: obj, table: t.name, column: col.name,
						text: fmt.Sprintf("column %s exists, which only version %d of the state has", obj, col.version(t))})
				}
			case !ok:
				out = append(out, schemaProblem{code: "missing_column", object: obj, table: t.name, column: col.name,
					text: fmt.Sprintf("column %s is missing", obj)})
			case got.typ != col.typ:
				out = append(out, schemaProblem{code: "wrong_column", object: obj, table: t.name, column: col.name,
					text: fmt.Sprintf("column %s is %s; rwc keeps %s in it", obj, got.typ, col.typ)})
			case got.notNull != col.notNull:
				want := "NOT NULL"
				if !col.notNull {
					want = "nullable"
				}
				out = append(out, schemaProblem{code: "wrong_column", object: obj, table: t.name, column: col.name,
					text: fmt.Sprintf("column %s is not %s as rwc made it", obj, want)})
			case (col.def != "" || col.serial) && !got.hasDef:
				out = append(out, schemaProblem{code: "wrong_column", object: obj, table: t.name, column: col.name,
					text: fmt.Sprintf("column %s lost its default", obj)})
			}
		}
		for _, k := range t.keys {
			if !c.has(t.name, k) {
				out = append(out, schemaProblem{code: "missing_key", object: "rwc." + t.name, table: t.name,
					text: fmt.Sprintf("table rwc.%s lacks its %s", t.name, keyText(k))})
			}
		}
	}
	return out
}

func keyText(k stateKey) string {
	cols := strings.Join(k.cols, ", ")
	switch k.kind {
	case "index":
		return "index on (" + cols + ")"
	case "foreign key":
		return "foreign key (" + cols + ") to rwc." + k.ref
	}
	return k.kind + " (" + cols + ")"
}

// columnSQL is a column's definition in CREATE TABLE.
func (c stateColumn) columnSQL() string {
	if c.serial {
		return pq.QuoteIdentifier(c.name) + " bigserial NOT NULL"
	}
	s := pq.QuoteIdentifier(c.name) + " " + c.typ
	if c.notNull {
		s += " NOT NULL"
	}
	if c.def != "" {
		s += " DEFAULT " + c.def
	}
	return s
}

// keySQL is a key's definition in CREATE TABLE or ALTER TABLE ADD (an
// index is created on its own: indexSQL).
func (k stateKey) keySQL() string {
	cols := make([]string, len(k.cols))
	for i, c := range k.cols {
		cols[i] = pq.QuoteIdentifier(c)
	}
	s := strings.ToUpper(k.kind) + " (" + strings.Join(cols, ", ") + ")"
	if k.kind == "foreign key" {
		s += " REFERENCES rwc." + pq.QuoteIdentifier(k.ref) + " ON DELETE CASCADE"
	}
	return s
}

func (k stateKey) indexSQL(table string) string {
	cols := make([]string, len(k.cols))
	for i, c := range k.cols {
		cols[i] = pq.QuoteIdentifier(c)
	}
	return "CREATE INDEX ON rwc." + pq.QuoteIdentifier(table) + " (" + strings.Join(cols, ", ") + ")"
}

// createSQL creates table t as the current state schema has it.
func (t stateTable) createSQL() string {
	var defs []string
	for _, c := range t.columns {
		defs = append(defs, c.columnSQL())
	}
	var after []string
	for _, k := range t.keys {
		if k.kind == "index" {
			after = append(after, k.indexSQL(t.name))
			continue
		}
		defs = append(defs, k.keySQL())
	}
	return "CREATE TABLE rwc." + pq.QuoteIdentifier(t.name) + " (" + strings.Join(defs, ", ") + ")" +
		strings.Join(append([]string{""}, after...), "; ")
}

// fill is the value a column re-added to a table that has rows takes in
// them, where it has no default: the neutral value of its type.
func (c stateColumn) fill() string {
	if c.def != "" {
		return c.def
	}
	switch c.typ {
	case "text":
		return "''"
	case "jsonb":
		return "'{}'"
	case "text[]":
		return "'{}'"
	case "boolean":
		return "false"
	case "timestamp with time zone":
		return "clock_timestamp()"
	}
	return "0"
}

package run

import (
	"context"
	"database/sql"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/compile/query"
)

// volatileCallsSQL resolves calls by name and argument count the way
// PostgreSQL's lookup starts: a qualified name in its schema, an
// unqualified one in the first schema of current_schemas(true) (pg_catalog
// and the search_path) that has a candidate. Argument types are not known
// here, so every candidate of that schema whose arity fits (defaults and
// VARIADIC included) counts, and one volatile candidate is enough to warn:
// a false warning can be acknowledged, a missed one commits a write.
const volatileCallsSQL = `WITH c AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS c(schema, name, nargs, i)
	), m AS (
		SELECT c.i, n.nspname, p.proname, p.provolatile,
			CASE WHEN c.schema = '' THEN array_position(current_schemas(true), n.nspname::text) ELSE 0 END AS pos
		FROM c
		JOIN pg_proc p ON p.proname = c.name
		JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE p.prokind <> 'p'
			AND (CASE WHEN c.schema = '' THEN n.nspname = ANY (current_schemas(true)) ELSE n.nspname = c.schema END)
			AND c.nargs >= p.pronargs - p.pronargdefaults - (p.provariadic <> 0)::int
			AND (c.nargs <= p.pronargs OR p.provariadic <> 0)
	)
	SELECT i, coalesce(string_agg(DISTINCT format('%I.%I', nspname, proname), ', ') FILTER (WHERE provolatile = 'v'), '')
	FROM (SELECT m.*, min(pos) OVER (PARTITION BY i) AS first FROM m) x
	WHERE pos = first
	GROUP BY i`

// VolatileLookup looks calls up in the database's catalog, for
// compile.Project.CatalogWarnings. It only reads the catalog.
func VolatileLookup(ctx context.Context, db *sql.DB) compile.VolatileLookup {
	return func(calls []query.Call) ([]string, error) {
		schemas := make([]string, len(calls))
		names := make([]string, len(calls))
		nargs := make([]int64, len(calls))
		for i, c := range calls {
			schemas[i], names[i], nargs[i] = c.Schema, c.Name, int64(c.Args)
		}
		rows, err := db.QueryContext(ctx, volatileCallsSQL, pq.Array(schemas), pq.Array(names), pq.Array(nargs))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := make([]string, len(calls))
		for rows.Next() {
			var i int
			var fn string
			if err := rows.Scan(&i, &fn); err != nil {
				return nil, err
			}
			if i >= 1 && i <= len(out) {
				out[i-1] = fn
			}
		}
		return out, rows.Err()
	}
}

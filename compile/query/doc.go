// Package query analyses REPLACE WHERE source queries with PostgreSQL's own
// parser (pg_query_go). It is the only package that imports pg_query_go;
// everything else sees plain Go types with byte offsets into the query text.
//
// Analyze answers, from the parse tree alone: the output column names (for
// the BY NAME check), the tables read (for the dependency DAG), and, through
// Analysis.Lineage, what a predicate column is made of and which table scans
// a predicate on it can be applied to. Fingerprint tells whether a query
// changed, ignoring layout.
//
// # No catalog, so conservative
//
// rwc analyses specs before (or without) a database, so nothing here looks
// at a catalog. Where the answer would need one, it is given in the
// direction that makes rwc fall back (a warning, a full recompute, a scan
// without the predicate), never in the direction that would apply a
// predicate where it does not hold:
//
//   - An unqualified column with several FROM items resolves to the item the
//     query shows has it (a USING / NATURAL column, a qualified reference
//     elsewhere in the same SELECT, a subquery's output list), else to the
//     only item that can have it; otherwise it is Plain with an unknown
//     Source table and every table NotExposed.
//   - Only inner joins make columns equal: ON conjuncts `a.x = b.y` (also
//     IS NOT DISTINCT FROM), USING, NATURAL on columns both sides are known
//     to have, and top-level WHERE conjuncts. The nullable side of a LEFT /
//     RIGHT / FULL join gets no predicate from its ON clause. Comparisons
//     through casts or functions are not equalities.
//   - A cast of a column (`ts::date`) is an Expression, not Plain: it can
//     change values, so a predicate on it is not one on the column.
//   - Subqueries and CTEs are traced through plain output columns. The
//     table a subquery's column comes from counts as exposed (through the
//     subquery's output, which PostgreSQL pushes down) only when the
//     subquery has no LIMIT/OFFSET, groups by the column if it aggregates,
//     has no DISTINCT ON or window without it, and, for a CTE, is inlined
//     (referenced once, not MATERIALIZED, not recursive). Tables equal to it
//     only through the subquery's own joins are NotExposed: PostgreSQL does
//     not copy the condition across them. Recursive CTEs, functions in FROM
//     and tables with renamed columns (`t AS x(a, b)`) are not traced: their
//     columns are Expressions.
//   - A set operation is traced arm by arm (Plain only if Plain in all), but
//     nothing is Exposed: whether PostgreSQL pushes into the arms depends on
//     column types.
//   - Aggregates are recognised by a fixed list of built-in aggregate names
//     plus the syntax only aggregates accept (`*`, DISTINCT, ORDER BY,
//     FILTER, WITHIN GROUP); a user-defined aggregate written as a plain
//     call looks like a function and yields Expression.
//   - GROUP BY name matches the output alias; PostgreSQL prefers an input
//     column of that name when one exists, which needs the catalog.
//   - A column that is not written out but may come from `*` is assumed to
//     (Lineage.FromStar says so).
//   - Tables only inside WHERE / SELECT-list subqueries are in
//     Analysis.Tables but not in Lineage's FROM-tree lists.
//
// # What is a source query
//
// Exactly one SELECT (WITH, set operations and VALUES included). Empty
// input, several statements, other statements, SELECT INTO and
// data-modifying CTEs are reported as a *SyntaxError whose Reason says
// which, so the caller has one error type with one offset to map. A SELECT
// that would lock rows (FOR UPDATE, …) or call functions is still one:
// Analysis.Locks and Analysis.Calls say where, and the caller judges them.
package query

package query

// Analysis is what rwc learns about a source query from its parse tree alone,
// without a catalog. Every answer that needs a catalog to be sure is given in
// the direction that makes rwc fall back (see doc.go), never in the one that
// would make it push a predicate where it does not hold.
type Analysis struct {
	// Fingerprint identifies the query ignoring layout and comments (see
	// the function Fingerprint).
	Fingerprint string

	// Columns are the output columns of the top-level SELECT, in order. A
	// `*` or `alias.*` target is not listed (its width needs a catalog); Star
	// says one was there. For a set operation they come from the leftmost
	// SELECT, as in PostgreSQL.
	Columns []OutputColumn
	// Star is the first `*` or `alias.*` in the top-level target list; nil
	// when there is none. With a star, BY NAME cannot be checked.
	Star *StarRef
	// Tables is every base table the query reads anywhere (FROM, joins,
	// subqueries, CTE bodies, set operation arms), deduplicated by schema and
	// name, ordered by first appearance. CTE names are not tables.
	Tables []TableRef
	// References is every reference to a base table, in query order, not
	// deduplicated: a table read twice (a self-join, a subquery in WHERE)
	// is there twice. A CTE's tables are there once however often the CTE
	// is read (and then it is not inlined, so nothing in it is Exposed).
	References []TableRef
	// Aggregates is true when the top-level query groups: GROUP BY, HAVING or
	// an aggregate call in its target list. For a set operation: any arm.
	Aggregates bool
	// SetOp is true when the top level is UNION / INTERSECT / EXCEPT.
	SetOp bool
	// Calls is every function call anywhere in the query, in text order,
	// not deduplicated: lint positions a warning at each.
	Calls []Call
	// Locks is every locking clause (FOR UPDATE, …) anywhere in the query:
	// a source query must only read, and these take row locks on the sources.
	Locks []Lock
	// Params are the byte offsets of parameter references ($1): rwc binds
	// no parameters, so a query with one cannot run.
	Params []int
	// Body is the statement as rwc embeds it: without a ';' that ends it
	// and anything after (a comment would keep the ';' inside rwc's SQL).
	Body string

	q *analyzer // the parse tree and what was derived from it, for Lineage
}

// ColumnKind says what an output column is made of.
type ColumnKind int

const (
	// Plain is a bare column reference (`o.date`, `date`).
	Plain ColumnKind = iota + 1
	// Expression is anything else without aggregates or windows, including a
	// cast of a bare column (`date::date` can change values, e.g. from a
	// timestamp, so a predicate on it is not a predicate on the column).
	Expression
	// Aggregate contains an aggregate call (count, sum, …) at this level.
	Aggregate
	// Window contains a window function call (`… OVER (…)`) and no aggregate.
	Window
)

func (k ColumnKind) String() string {
	switch k {
	case Plain:
		return "plain"
	case Expression:
		return "expression"
	case Aggregate:
		return "aggregate"
	case Window:
		return "window"
	}
	return "unknown"
}

// OutputColumn is one output column of the top-level SELECT.
type OutputColumn struct {
	// Name is the name PostgreSQL gives the column: the alias, else the rules
	// of FigureColname (`o.date` → date, `count(*)` → count, `x::date` → x,
	// CASE → case, `a + b` → ?column?).
	Name string
	// Offset is the byte offset of the target expression in the query.
	Offset int
	Kind   ColumnKind
	// Named is false when PostgreSQL invents the name (?column?): matching
	// BY NAME needs an alias then.
	Named bool
	// Aliased is true when the name was written with AS.
	Aliased bool
}

// StarRef is a `*` or `alias.*` in the target list.
type StarRef struct {
	Offset    int
	Qualifier string // "" for a bare `*`
}

// TableRef is one reference to a base table.
type TableRef struct {
	Schema string // "" when not qualified
	Name   string
	Alias  string // "" when not aliased
	Offset int    // byte offset of the table name in the query
}

// Lineage says where the value of one output column comes from and which
// scans a predicate on it can be applied to.
type Lineage struct {
	// Found is false when no output column has that name (and no star could
	// supply it).
	Found bool
	// Kind of the value traced through subqueries and CTEs: a plain output
	// column of a subquery whose column is an aggregate is Aggregate. For a
	// set operation, Plain only if it is Plain in every arm.
	Kind ColumnKind
	// FromStar is true when the column is not written in the target list and
	// was assumed to come from a `*` (a catalog would be needed to be sure).
	FromStar bool
	// Source is set when Kind is Plain: the base column the value is.
	Source *ColumnSource
	// InGroupBy: when the top-level query groups (Analysis.Aggregates),
	// whether the column is a grouping key (same expression, same column or
	// one equal to it through joins, output position, or output alias). A
	// key only inside ROLLUP / CUBE / GROUPING SETS does not count. For a
	// set operation: a key in every arm that groups.
	InGroupBy bool
	// Exposed are the base-table scans a predicate on this column can be
	// applied to without changing the result: the source itself and every
	// table equal to it through inner-join ON / USING equalities and
	// top-level WHERE equalities. Empty when the predicate cannot be pushed
	// at all (aggregate not grouped on it, LIMIT, window not partitioned by
	// it, DISTINCT ON without it, set operation).
	Exposed []Exposure
	// NotExposed are the base tables in the FROM tree (subqueries and CTEs
	// included) that would be scanned in full.
	NotExposed []TableRef
}

// ColumnSource is the base column a plain output column is.
type ColumnSource struct {
	// Table is zero (Name == "") when it cannot be known without a catalog:
	// an unqualified column with several FROM items and no USING or
	// equality naming it.
	Table  TableRef
	Column string
	// Ref references the value in the top-level query's scope, e.g. `o.date`,
	// `s.date` for a subquery s, or `date` when the table is unknown. For a
	// set operation it is the leftmost arm's Source, in that arm's scope.
	Ref string
}

// Exposure is one base table that carries the predicate column's value.
type Exposure struct {
	Table TableRef
	// Column is the column in Table.
	Column string
	// Ref references it in the top-level query's scope, quoted when needed
	// (e.g. `o.date`, `"Order".date`). For a table inside a subquery or CTE
	// it is the subquery's output column (`s.date`): PostgreSQL pushes a
	// condition on it down to the table.
	Ref string
}

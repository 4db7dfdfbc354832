package query

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Function is a function the query calls, as written (schema "" when not
// qualified). Whether it is immutable is the catalog's to say.
type Function struct {
	Schema, Name string
}

// Dependencies lists what a query's result depends on besides the rows of
// its tables: the functions it calls, and whether it reads the clock or the
// session (CURRENT_DATE, now() via Functions, CURRENT_USER…) or calls a
// function in FROM. Incremental refresh can only see changes to table rows,
// so anything here must be proven immutable or make it fall back.
type Dependencies struct {
	Functions []Function
	// Session: SQL value functions (CURRENT_DATE, CURRENT_TIMESTAMP,
	// CURRENT_USER, …), which depend on when and who, not on any row.
	Session bool
	// FromFunction: a function in FROM (generate_series, a set-returning
	// function of the user's) whose rows rwc cannot fingerprint.
	FromFunction bool
}

// Dependencies walks the whole query, subqueries and CTEs included, in
// the tree Analyze parsed; the functions are its Calls, each once.
func (a *Analysis) Dependencies() Dependencies {
	var d Dependencies
	seen := map[Function]bool{}
	for _, c := range a.Calls {
		if f := (Function{Schema: c.Schema, Name: c.Name}); !seen[f] {
			seen[f] = true
			d.Functions = append(d.Functions, f)
		}
	}
	walk(a.q.top.ProtoReflect(), 0, func(m protoreflect.Message) bool {
		switch m.Interface().(type) {
		case *pg.SQLValueFunction:
			d.Session = true
		case *pg.RangeFunction, *pg.RangeTableFunc:
			d.FromFunction = true
		}
		return true
	})
	return d
}

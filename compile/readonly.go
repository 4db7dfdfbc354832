package compile

import (
	"fmt"

	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
)

// sessionChangers are the pg_catalog functions, callable by any role,
// that change what rwc's own statements rely on later in the refresh's
// session: settings (set_config: standard_conforming_strings, search_path,
// …) and advisory locks (the unlock functions can release the flow's own
// session lock mid-refresh, letting a second rwc refresh the flow at once).
// No source query has a reason to call them, so they are errors, not the
// volatile warning.
var sessionChangers = map[string]string{
	"set_config":                "changes a session setting that rwc's later statements rely on",
	"pg_advisory_unlock":        "releases advisory locks, which can be rwc's own lock on the flow",
	"pg_advisory_unlock_shared": "releases advisory locks, which can be rwc's own lock on the flow",
	"pg_advisory_unlock_all":    "releases every advisory lock of the session, rwc's own lock on the flow included",
}

// volatileHint says what a volatile call does to a refresh and how to
// acknowledge one that is meant.
const volatileHint = "it runs in the refresh's transaction with rwc's privileges, so what it writes commits with the refresh, and it may give another result on every run; " +
	"read the sources instead, or, if the call is intended, acknowledge it on its line: -- rwc:nolint RW405 <reason>"

// readOnly checks that a source query only reads: no locking clause
// (RW309), no call that changes the session (RW310), and a warning on
// every call of a built-in function PostgreSQL marks volatile (RW405).
// User-defined functions need the database's catalog: see CatalogWarnings.
func readOnly(t *spec.Table, a *query.Analysis) diag.List {
	var ds diag.List
	for _, l := range a.Locks {
		ds.Errorf("RW309", t.Query.AtOffset(l.Offset), "remove "+l.Clause+": rwc's refresh already runs in one transaction and needs no row locks",
			"the query has a locking clause (%s): it would lock the source rows it reads for the whole refresh, blocking their writers", l.Clause)
	}
	for _, off := range a.Params {
		ds.Errorf("RW311", t.Query.AtOffset(off), "write the value into the query, or compute it from a source table",
			"the query refers to a parameter, which rwc cannot give: it runs the query as written")
	}
	for _, c := range a.Calls {
		if c.Schema != "" && c.Schema != "pg_catalog" {
			continue
		}
		if what, ok := sessionChangers[c.Name]; ok {
			ds.Errorf("RW310", t.Query.AtOffset(c.Offset), "remove the call; a source query only reads",
				"the query calls %s, which %s", c.Name, what)
			continue
		}
		if volatileBuiltins[c.Name] {
			ds.Warnf("RW405", t.Query.AtOffset(c.Offset), volatileHint, "the query calls %s, a volatile function", c.Name)
		}
	}
	return ds
}

// builtinChecked reports whether lint already judged the call by name.
func builtinChecked(c query.Call) bool {
	if c.Schema != "" && c.Schema != "pg_catalog" {
		return false
	}
	_, session := sessionChangers[c.Name]
	return session || volatileBuiltins[c.Name]
}

// VolatileLookup answers, for each call, the function the database
// resolves it to when that function is neither IMMUTABLE nor STABLE
// ("schema.name"), or "" when it is, or when nothing matches.
type VolatileLookup func(calls []query.Call) ([]string, error)

// CatalogWarnings are the RW405 warnings only a database can give: calls
// of functions lint does not know (user-defined ones, resolved through the
// search_path when unqualified) that the catalog says are volatile. Calls
// lint already reported are not asked about again; the warnings are
// suppressed by rwc:nolint like lint's.
func (p *Project) CatalogWarnings(lookup VolatileLookup) (diag.List, error) {
	type site struct {
		t *spec.Table
		c query.Call
	}
	var sites []site
	var calls []query.Call
	for _, f := range p.Flows {
		if f.Query == nil {
			continue
		}
		for _, c := range f.Query.Calls {
			if !builtinChecked(c) {
				sites = append(sites, site{f.Table, c})
				calls = append(calls, c)
			}
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	found, err := lookup(calls)
	if err != nil {
		return nil, fmt.Errorf("looking up the queries' functions in the catalog: %w", err)
	}
	var ds diag.List
	for i, fn := range found {
		if fn != "" && i < len(sites) {
			ds.Warnf("RW405", sites[i].t.Query.AtOffset(sites[i].c.Offset), volatileHint,
				"the query calls %s, which the database's catalog says is volatile (not IMMUTABLE or STABLE)", fn)
		}
	}
	ds = suppress(p.Spec, ds)
	ds.Sort()
	return ds, nil
}

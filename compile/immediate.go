package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// A flow with maintain: immediate has rwc's triggers on each of its source
// tables keep its window equal to the query inside every writer's
// transaction, between the applies that move the window. The window kept
// is the one the last refresh resolved (the triggers' functions hold it as
// literals, and each refresh that resolves another replaces them), so a
// writer never changes history outside the window rwc last wrote.
//
// Each trigger first takes the flow's lock (FlowLockNamespace), which a
// refresh holds from before its transaction begins to after it ends, for
// the rest of the writer's transaction: maintenance runs one writer at a
// time per flow and never beside a refresh, each statement after the lock
// sees what the writers before it committed (READ COMMITTED takes a
// snapshot per statement), and a refresh's snapshot, taken once it has the
// lock, sees every maintenance before it. It then updates the flow's row
// in rwc.flows, as every refresh does: a writer in REPEATABLE READ or
// SERIALIZABLE, whose snapshot can predate a commit of another
// maintenance or of a refresh, fails with a serialization error instead,
// which such writers retry. So no two maintenances, nor a maintenance and
// a refresh, ever compute from snapshots that miss each other's writes.

// FlowLockNamespace prefixes a flow's name to make the key of its advisory
// lock (hashtextextended(key, 0)).
const FlowLockNamespace = "rwc.flow:"

// Maintain says how a source's writes are carried to the target.
type Maintain string

const (
	// MaintainDelta: the query over the statement's new rows alone is
	// inserted (Query.Delta).
	MaintainDelta Maintain = "delta"
	// MaintainDays: the partitions the statement touched are recomputed.
	MaintainDays Maintain = "partitions"
	// MaintainWindow: the window is recomputed.
	MaintainWindow Maintain = "window"
)

// Maintenance is one source table's part of an immediate flow's upkeep:
// its function and triggers.
type Maintenance struct {
	Source   string   `json:"source"` // quoted, as the query names it
	Inserts  Maintain `json:"inserts"`
	Changes  Maintain `json:"updates_deletes"`
	Function string   `json:"function"` // quoted rwc.name
	Body     string   `json:"-"`        // its body, as pg_proc.prosrc holds it
	// Stamp is the function's COMMENT, which its body checks once it has
	// the flow's lock: a writer that waited for a refresh replacing the
	// function would otherwise go on with the body from before it.
	Stamp string `json:"-"`
	// SQL makes the function (FunctionSQL) and then its triggers; a
	// refresh runs the trigger statements only where some are missing,
	// since they lock the source against its writers.
	SQL         []string `json:"sql"`
	FunctionSQL []string `json:"-"`
	// Checks are the statements of Body that the transition tables feed,
	// for the refresh to have the server plan before it installs them
	// (rwc_new and rwc_old as temporary tables like the source).
	Checks []string `json:"-"`
}

// Setting is a run-time parameter a maintenance function runs with: the
// refresh's own, so that the query yields in a writer's session what it
// yields in rwc's.
type Setting struct{ Name, Value string }

// MaintainedSettings are the parameters whose values a refresh reads from
// its session for the maintenance functions (search_path gets pg_temp
// last: a writer's temporary table must not stand in for a source).
var MaintainedSettings = []string{"search_path", "TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits",
	"lc_monetary", "lc_numeric", "lc_time", "default_text_search_config", "bytea_output", "xmloption", "xmlbinary",
	"quote_all_identifiers", "transform_null_equals", "timezone_abbreviations", "array_nulls"}

// Immediate says whether f's target is maintained by triggers.
func (f *Flow) Immediate() bool { return f.Table.Maintain == spec.MaintainImmediate }

// MaintainPrefix is the start of the names of f's maintenance functions in
// schema rwc: a flow's name can be longer than an identifier.
func MaintainPrefix(flow string) string {
	h := sha256.Sum256([]byte(flow))
	return MaintainPrefixAll + hex.EncodeToString(h[:6]) + "_"
}

// MaintainPrefixAll starts the name of every maintenance function.
const MaintainPrefixAll = "maintain_"

// MaintainFunction is the name of f's maintenance function of its i-th
// source (Query.Tables), quoted, in schema rwc.
func MaintainFunction(flow string, i int) string {
	return "rwc." + pq.QuoteIdentifier(fmt.Sprintf("%s%d", MaintainPrefix(flow), i))
}

// CaptureSources are f's source tables, quoted, in the query's order (the
// order of MaintainFunction's numbers).
func (f *Flow) CaptureSources() []string {
	var out []string
	if f.Query != nil {
		for _, t := range f.Query.Tables {
			out = append(out, quoteTable(t))
		}
	}
	return out
}

// MaintainTriggers are the names of a maintenance's triggers on a source,
// by event: a trigger with transition tables fires on one event only. The
// first takes the flow's lock before the statement locks any row: taken
// after them, a statement holding a row that a writer already maintained
// wants would wait for that writer, which waits for the row.
var MaintainTriggers = []struct{ Suffix, When, Event, Referencing string }{
	{"lock", "BEFORE", "INSERT OR UPDATE OR DELETE OR TRUNCATE", ""},
	{"insert", "AFTER", "INSERT", "REFERENCING NEW TABLE AS rwc_new"},
	{"update", "AFTER", "UPDATE", "REFERENCING OLD TABLE AS rwc_old NEW TABLE AS rwc_new"},
	{"delete", "AFTER", "DELETE", "REFERENCING OLD TABLE AS rwc_old"},
	{"truncate", "AFTER", "TRUNCATE", ""},
}

// MaintainTrigger is the name of f's trigger for one event on a source.
func MaintainTrigger(flow, suffix string) string { return "rwc_" + MaintainPrefix(flow) + suffix }

// analyzeMaintain refuses maintain: immediate where its triggers could not
// keep the target as a refresh would.
func (f *Flow) analyzeMaintain() diag.List {
	var ds diag.List
	if !f.Immediate() {
		return ds
	}
	key, why := "", ""
	switch {
	case f.Table.Partitioning != nil:
		key, why = "partitioning:", "rwc swaps whole partitions in, which a writer's trigger cannot"
	case f.Table.Distribution != nil:
		key, why = "distribution:", "a Citus table's writes run on its workers, where rwc's triggers do not"
	}
	if f.Query != nil && key == "" {
		for _, t := range f.Query.References {
			if t.Schema == "" && (t.Name == "rwc_new" || t.Name == "rwc_old") {
				ds.Errorf("RW135", f.Table.Query.AtOffset(t.Offset), "name the table with its schema (e.g. public."+t.Name+"), or drop maintain: immediate",
					"maintain: immediate: the query reads a table named %s unqualified, which inside rwc's triggers is their transition table", t.Name)
			}
		}
	}
	if key != "" {
		ds.Errorf("RW135", f.Table.MaintainPos, "drop maintain: immediate (the target then follows its sources at each rwc apply), or drop "+key,
			"maintain: immediate cannot be combined with %s: %s", key, why)
	}
	return ds
}

// Maintenance renders f's functions and triggers for the window p as
// resolved (s: its statements, Flow.Statements), with the refresh's
// settings.
func (f *Flow) Maintenance(p *predicate.Predicate, s Statements, settings []Setting) ([]Maintenance, error) {
	if f.Query == nil {
		return nil, fmt.Errorf("flow %s has no query", f.Name())
	}
	cols := f.partitionSources()
	var out []Maintenance
	for i, t := range f.Query.Tables {
		m := Maintenance{Source: quoteTable(t), Inserts: MaintainWindow, Changes: MaintainWindow,
			Function: MaintainFunction(f.Name(), i)}
		recompute := func(days string) []string { return []string{s.Delete, s.Insert} }
		col, aligned := cols[tableName(t)]
		if aligned && f.Incremental() {
			m.Inserts, m.Changes = MaintainDays, MaintainDays
			recompute = func(days string) []string { return f.daysSQL(p, s, col, days) }
		}
		ins := recompute("SELECT n." + pq.QuoteIdentifier(col) + " FROM rwc_new n")
		var delta []string
		if q, ok := f.Query.Delta(t, "rwc_new"); ok {
			m.Inserts = MaintainDelta
			delta = []string{f.insertSQL(s.Target, p, q, s.PredicateSQL)}
		}
		upd := recompute("SELECT n." + pq.QuoteIdentifier(col) + " FROM rwc_new n UNION SELECT o." + pq.QuoteIdentifier(col) + " FROM rwc_old o")
		del := recompute("SELECT o." + pq.QuoteIdentifier(col) + " FROM rwc_old o")
		m.Checks = slices.Concat(delta, ins, upd, del)
		b := maintainBody{flow: f.Name(), source: m.Source, function: m.Function, delta: delta, ins: ins, upd: upd, del: del, truncate: []string{s.Delete, s.Insert}}
		set := setClauses(settings)
		m.Stamp = b.stamp(set)
		m.Body = b.render(m.Stamp)
		tag := dollarTag(m.Body)
		m.FunctionSQL = []string{
			fmt.Sprintf("CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER%s AS %s%s%[3]s",
				m.Function, set, tag, m.Body),
			// A trigger of anyone's own calling it would have it write
			// their rows into the target with rwc's rights.
			"REVOKE ALL ON FUNCTION " + m.Function + "() FROM PUBLIC",
			"COMMENT ON FUNCTION " + m.Function + "() IS " + pq.QuoteLiteral(m.Stamp),
		}
		m.SQL = append(slices.Clone(m.FunctionSQL), maintainTriggerSQL(f.Name(), m.Source, m.Function)...)
		out = append(out, m)
	}
	return out, nil
}

// dollarTag is a dollar quote that body does not hold: the body embeds
// the flow's query, which may hold any text.
func dollarTag(body string) string {
	for i := 0; ; i++ {
		tag := fmt.Sprintf("$rwc%d$", i)
		if !strings.Contains(body, tag) {
			return tag
		}
	}
}

// daysSQL recomputes the partitions whose values days (a SELECT of the
// source's column from a transition table) lists, within the window.
func (f *Flow) daysSQL(p *predicate.Predicate, s Statements, col, days string) []string {
	where := fmt.Sprintf("(%s) AND %s IN (%s)", s.PredicateSQL, pq.QuoteIdentifier(f.PartitionBy), days)
	src := f.Query.Body
	return []string{
		fmt.Sprintf("DELETE FROM %s WHERE %s", s.Target, where),
		f.insertSQL(s.Target, p, src, where),
	}
}

// maintainBody is a maintenance function's body: for the lock trigger,
// the flow's lock; for the others, the lock, the flow's row (see the
// comment at the top), the check that the function is still the one rwc
// made last (Maintenance.Stamp), then the statements for the event; for
// an insert, the delta when the source has one (see maintainedMark),
// else ins. Columns win over the function's variables (FOUND, TG_OP):
// the query may name a column so.
type maintainBody struct {
	flow, source, function         string
	delta, ins, upd, del, truncate []string
}

// stamp is a hash of everything the body holds but the stamp itself.
func (b maintainBody) stamp(settings string) string {
	h := sha256.Sum256([]byte(settings + "\x00" + b.render("")))
	return "rwc maintenance " + hex.EncodeToString(h[:])
}

func (b maintainBody) render(stamp string) string {
	block := func(indent string, stmts []string) string {
		return indent + strings.Join(stmts, ";\n"+indent) + ";\n"
	}
	flow, mark := pq.QuoteLiteral(b.flow), pq.QuoteLiteral(maintainedMark(b.flow))
	lock := "\tPERFORM pg_advisory_xact_lock(hashtextextended(" + pq.QuoteLiteral(FlowLockNamespace+b.flow) + ", 0));\n"
	insert := block("\t\t", b.ins)
	if b.delta != nil {
		insert = "\t\tIF current_setting(" + mark + ", true) IS DISTINCT FROM rwc_statement THEN\n" + block("\t\t\t", b.delta) +
			"\t\tELSE\n" + block("\t\t\t", b.ins) + "\t\tEND IF;\n"
	}
	return "\n#variable_conflict use_column\nDECLARE\n\trwc_statement constant text := statement_timestamp()::text;\n" +
		"BEGIN\n\tIF TG_RELID <> " + pq.QuoteLiteral(b.source) + "::regclass THEN\n" +
		"\t\tRAISE EXCEPTION 'rwc: % maintains flow %''s target from %, not from %', TG_NAME, " + flow + ", " + pq.QuoteLiteral(b.source) + ", TG_TABLE_NAME;\n\tEND IF;\n" +
		lock + "\tIF TG_WHEN = 'BEFORE' THEN\n\t\tRETURN NULL;\n\tEND IF;\n" +
		"\tUPDATE rwc.flows SET flow = flow WHERE flow = " + flow + ";\n" +
		"\tIF NOT FOUND THEN\n\t\tRETURN NULL;\n\tEND IF;\n" +
		"\tIF obj_description(" + pq.QuoteLiteral(b.function+"()") + "::regprocedure, 'pg_proc') IS DISTINCT FROM " + pq.QuoteLiteral(stamp) + " THEN\n" +
		"\t\tRAISE EXCEPTION 'rwc replaced the maintenance of flow % while this statement waited for it: retry the transaction', " + flow + " USING ERRCODE = '40001';\n\tEND IF;\n" +
		"\tIF TG_OP = 'INSERT' THEN\n" + insert +
		"\tELSIF TG_OP = 'UPDATE' THEN\n" + block("\t\t", b.upd) +
		"\tELSIF TG_OP = 'DELETE' THEN\n" + block("\t\t", b.del) +
		"\tELSE\n" + block("\t\t", b.truncate) +
		"\tEND IF;\n\tPERFORM set_config(" + mark + ", rwc_statement, true);\n\tRETURN NULL;\nEND\n"
}

// maintainedMark names the transaction's setting in which f's maintenance
// marks the client statement (its statement_timestamp) that last ran it.
// A delta is right only for a statement whose new rows no maintenance of
// the flow has read yet: an upsert fires its update's triggers before its
// insert's, a MERGE its deletes' and updates' before, and a query writing
// two sources (a data-modifying CTE) runs both statements before either's
// triggers, so a second maintenance in one statement would add the rows
// the first one recomputed, or a join of both sources' new rows twice.
// Such an insert recomputes instead, as a source without a delta does.
func maintainedMark(flow string) string {
	return "rwc." + strings.TrimSuffix(MaintainPrefix(flow), "_")
}

// setClauses pins the settings, and those under which lint read the
// query, for the function's runs.
func setClauses(settings []Setting) string {
	var b strings.Builder
	for _, s := range append([]Setting{{"standard_conforming_strings", "on"}, {"backslash_quote", "safe_encoding"}}, settings...) {
		v := pq.QuoteLiteral(s.Value)
		if s.Name == "search_path" {
			v = searchPathLast(s.Value)
		}
		fmt.Fprintf(&b, " SET %s = %s", s.Name, v)
	}
	return b.String()
}

// searchPathLast is a search_path's value with pg_temp last: unnamed, it
// would be searched first, and a writer's temporary table could stand in
// for a source.
func searchPathLast(path string) string {
	var keep []string
	for _, e := range strings.Split(path, ",") {
		if e = strings.TrimSpace(e); e != "" && e != "pg_temp" {
			keep = append(keep, e)
		}
	}
	return strings.Join(append(keep, "pg_temp"), ", ")
}

// maintainTriggerSQL (re)creates a maintenance's triggers on source.
func maintainTriggerSQL(flow, source, function string) []string {
	var out []string
	for _, t := range MaintainTriggers {
		name := pq.QuoteIdentifier(MaintainTrigger(flow, t.Suffix))
		out = append(out, "DROP TRIGGER IF EXISTS "+name+" ON "+source,
			fmt.Sprintf("CREATE TRIGGER %s %s %s ON %s %s FOR EACH STATEMENT EXECUTE FUNCTION %s()", name, t.When, t.Event, source, t.Referencing, function))
	}
	return out
}

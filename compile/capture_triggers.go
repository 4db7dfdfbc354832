package compile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec"
)

// CaptureTrigger is the name of rwc's trigger on the tables of a flow
// that captures by triggers (spec capture: triggers).
const CaptureTrigger = "rwc_capture"

// CaptureReplicaTrigger is its companion for the writes of a logical
// replication apply worker, which fires row triggers only (and only those
// enabled for replicas): FOR EACH ROW, ENABLE REPLICA, so that no other
// writer pays for it but a session with session_replication_role =
// replica (which the statement trigger logs too).
const CaptureReplicaTrigger = "rwc_capture_replica"

// CaptureFunctionBody is rwc.capture()'s body: one row per transaction
// and table in rwc.change_log. A statement-level trigger costs a writer
// one insert per statement, whatever its rows; the transaction id, not a
// sequence, says when the change became visible (run/capture_triggers.go
// compares it with a refresh's snapshot), so a writer still running when
// a refresh looks is seen by the next one. A partition's write is logged
// as its partitioned table's (the root of its tree), which is what a flow
// reads and what rwc.captures keeps a snapshot of: the partitions rwc
// swaps in and out come and go, the root stays.
const CaptureFunctionBody = `
BEGIN
	INSERT INTO rwc.change_log (relid, xid) VALUES (coalesce(pg_partition_root(TG_RELID), TG_RELID), pg_current_xact_id()) ON CONFLICT DO NOTHING;
	RETURN NULL;
END
`

// CaptureFunctionSQL creates rwc.capture(). SECURITY DEFINER: the writers
// of a source need no right on rwc's schema; a trigger function cannot be
// called but as a trigger. The search_path is fixed so that no writer's
// objects stand in for pg_catalog's.
const CaptureFunctionSQL = `CREATE OR REPLACE FUNCTION rwc.capture() RETURNS trigger LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $rwc$` + CaptureFunctionBody + `$rwc$`

// CaptureFunctionConfig is rwc.capture()'s pg_proc.proconfig, as
// CaptureFunctionSQL sets it: with another search_path, a function on it
// could stand in for pg_current_xact_id() and log a transaction that every
// snapshot has seen.
const CaptureFunctionConfig = "search_path=pg_catalog, pg_temp"

// CaptureTriggerType is pg_trigger.tgtype of rwc's trigger: AFTER, FOR
// EACH STATEMENT, on INSERT (4), DELETE (8), UPDATE (16) and TRUNCATE (32).
// On a table whose partition values rwc logs, it fires on TRUNCATE only
// (CaptureTruncateType), and the value triggers log the rest.
const (
	CaptureTriggerType  = 4 | 8 | 16 | 32
	CaptureTruncateType = 32
)

// CaptureReplicaTriggerType is CaptureReplicaTrigger's: FOR EACH ROW (1),
// AFTER, on INSERT, DELETE and UPDATE (an apply worker's TRUNCATE fires
// the statement trigger).
const CaptureReplicaTriggerType = 1 | 4 | 8 | 16

// CaptureValuesFunctionBody is rwc.capture_values()'s body, the function
// of the value triggers (CaptureTriggers): for each column its arguments
// name (by attnum: a renamed column keeps being logged), the distinct
// values the statement's rows held before and after it, one row each in
// rwc.change_values, so that a refresh probes only the partitions they
// name. A value it cannot log says "anything may have changed", and that
// table is probed whole: a NULL is logged with attnum 0, and so is a value
// longer than 1 kB (rwc.change_values' key could not hold it, and the
// writer's statement would fail), a column dropped since in
// rwc.change_log. Values are read as text with DateStyle ISO, as rwc's
// probes read them. The statement's distinct values are found before they
// are read as text (a hashed DISTINCT, not array_agg(DISTINCT …)'s sort of
// every row's text): of a date or an integer column, by the column's own
// equality, under which two values are equal only if their text is; of any
// other, as text byte by byte (COLLATE "C": under a nondeterministic
// collation, values that name different partitions could compare equal,
// and one go unlogged). Only the read of the column, whose name it looks
// up, is SQL built at each call, and planned each time; the insert is
// planned once a session (docs/benchmarks.md has what each costs a
// writer).
const CaptureValuesFunctionBody = `
DECLARE
	a text;
	col name;
	exact boolean;
	val text;
	vals text[];
	rows text;
BEGIN
	FOREACH a IN ARRAY TG_ARGV LOOP
		SELECT attname, atttypid IN ('date'::regtype, 'int2'::regtype, 'int4'::regtype, 'int8'::regtype) INTO col, exact
			FROM pg_attribute WHERE attrelid = TG_RELID AND attnum = a::int2 AND NOT attisdropped;
		IF NOT FOUND THEN
			INSERT INTO rwc.change_log (relid, xid) VALUES (TG_RELID, pg_current_xact_id()) ON CONFLICT DO NOTHING;
			CONTINUE;
		END IF;
		val := CASE WHEN exact THEN format('%I', col) ELSE format('%I::text COLLATE "C"', col) END;
		rows := CASE TG_OP WHEN 'INSERT' THEN format('SELECT DISTINCT %s FROM rwc_new', val)
			WHEN 'DELETE' THEN format('SELECT DISTINCT %s FROM rwc_old', val)
			ELSE format('SELECT %s FROM rwc_new UNION SELECT %s FROM rwc_old', val, val) END;
		EXECUTE 'SELECT array_agg(CASE WHEN octet_length(v::text) <= 1024 THEN v::text END) FROM (' || rows || ') u (v)' INTO vals;
		INSERT INTO rwc.change_values (relid, xid, attnum, value)
			SELECT TG_RELID, pg_current_xact_id(), CASE WHEN v IS NULL THEN 0 ELSE a::int2 END, coalesce(v, '')
			FROM unnest(vals) v ON CONFLICT DO NOTHING;
	END LOOP;
	RETURN NULL;
END
`

// CaptureValuesFunctionSQL creates rwc.capture_values(), as
// CaptureFunctionSQL does rwc.capture().
const CaptureValuesFunctionSQL = `CREATE OR REPLACE FUNCTION rwc.capture_values() RETURNS trigger LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET DateStyle = ISO AS $rwc$` + CaptureValuesFunctionBody + `$rwc$`

// CaptureValuesFunctionConfig is rwc.capture_values()'s pg_proc.proconfig.
var CaptureValuesFunctionConfig = []string{CaptureFunctionConfig, "DateStyle=iso"}

// CaptureTriggerDef is one of the triggers rwc gives a table, as
// pg_trigger holds it.
type CaptureTriggerDef struct {
	Name     string
	Type     int    // tgtype
	Enabled  string // tgenabled: A always, R replica only
	Function string // in schema rwc
	Old, New string // its transition tables ("": none)
	Values   bool   // it logs values: its arguments are the attnums logged
}

// CaptureTriggers are the triggers rwc gives a table: the statement
// trigger and its replica companion, and when the table's partition
// values are logged (values), the value triggers, one per event (a
// trigger with transition tables fires on one event only).
func CaptureTriggers(values bool) []CaptureTriggerDef {
	if !values {
		return []CaptureTriggerDef{
			{Name: CaptureTrigger, Type: CaptureTriggerType, Enabled: "A", Function: "capture"},
			{Name: CaptureReplicaTrigger, Type: CaptureReplicaTriggerType, Enabled: "R", Function: "capture"},
		}
	}
	return []CaptureTriggerDef{
		{Name: CaptureTrigger, Type: CaptureTruncateType, Enabled: "A", Function: "capture"},
		{Name: CaptureTrigger + "_delete", Type: 8, Enabled: "A", Function: "capture_values", Old: "rwc_old", Values: true},
		{Name: CaptureTrigger + "_insert", Type: 4, Enabled: "A", Function: "capture_values", New: "rwc_new", Values: true},
		{Name: CaptureReplicaTrigger, Type: CaptureReplicaTriggerType, Enabled: "R", Function: "capture"},
		{Name: CaptureTrigger + "_update", Type: 16, Enabled: "A", Function: "capture_values", Old: "rwc_old", New: "rwc_new", Values: true},
	}
}

var captureEvents = map[int]string{4: "INSERT", 8: "DELETE", 16: "UPDATE", 32: "TRUNCATE"}

// createSQL creates d on table, logging the columns attnums.
func (d CaptureTriggerDef) createSQL(table string, attnums []int) string {
	var events []string
	for _, bit := range []int{4, 16, 8, 32} {
		if d.Type&bit != 0 {
			events = append(events, captureEvents[bit])
		}
	}
	var ref []string
	if d.Old != "" {
		ref = append(ref, "OLD TABLE AS "+d.Old)
	}
	if d.New != "" {
		ref = append(ref, "NEW TABLE AS "+d.New)
	}
	referencing, each, args := "", "STATEMENT", ""
	if len(ref) > 0 {
		referencing = " REFERENCING " + strings.Join(ref, " ")
	}
	if d.Type&1 != 0 {
		each = "ROW"
	}
	if d.Values {
		quoted := make([]string, len(attnums))
		for i, a := range attnums {
			quoted[i] = fmt.Sprintf("'%d'", a)
		}
		args = strings.Join(quoted, ", ")
	}
	return "CREATE TRIGGER " + d.Name + " AFTER " + strings.Join(events, " OR ") + " ON " + table + referencing +
		" FOR EACH " + each + " EXECUTE FUNCTION rwc." + d.Function + "(" + args + ")"
}

// CapturesByTriggers reports whether f's refreshes read what changed from
// rwc's triggers before they probe.
func (f *Flow) CapturesByTriggers() bool { return f.Table.Capture == spec.CaptureTriggers }

// CaptureTables are the tables whose triggers a refresh of f reads, quoted:
// its sources and its target, sorted.
func (f *Flow) CaptureTables() []string {
	seen := map[string]bool{f.Target(): true}
	out := []string{f.Target()}
	if f.Query != nil {
		for _, t := range f.Query.Tables {
			if q := quoteTable(t); !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	sort.Strings(out)
	return out
}

// CaptureColumns maps each of f's sources fingerprinted per partition
// (quoted, as CaptureTables names them) to its column that the partition
// column is: the column whose values rwc's triggers log on it, so that an
// incremental refresh probes only the partitions named there.
func (f *Flow) CaptureColumns() map[string]string {
	out := map[string]string{}
	if !f.Incremental() {
		return out
	}
	cols := f.partitionSources()
	for _, t := range f.Query.Tables {
		if c, ok := cols[tableName(t)]; ok {
			out[quoteTable(t)] = c
		}
	}
	return out
}

// CaptureTriggerSQL (re)creates rwc's triggers on table (CaptureTriggers),
// logging the values of the columns attnums (none: it logs that the table
// changed, not where). The statement triggers fire for every session
// (ENABLE ALWAYS: a session with session_replication_role = replica
// writes too); the row trigger for what a logical replication apply
// worker writes, which fires no statement trigger.
func CaptureTriggerSQL(table string, attnums []int) []string {
	var out []string
	for _, d := range CaptureTriggers(true) {
		out = append(out, "DROP TRIGGER IF EXISTS "+d.Name+" ON "+table)
	}
	for _, d := range CaptureTriggers(len(attnums) > 0) {
		mode := "ALWAYS"
		if d.Enabled == "R" {
			mode = "REPLICA"
		}
		out = append(out, d.createSQL(table, attnums), "ALTER TABLE "+table+" ENABLE "+mode+" TRIGGER "+d.Name)
	}
	return out
}

// CapturePartitionTriggerSQL gives a partition of a partitioned table that
// captures by triggers its own statement trigger: a write straight to the
// partition fires none of its parent's statement triggers. (The replica
// trigger, a row trigger, is the parent's, which PostgreSQL clones onto
// every partition, those attached later too.)
func CapturePartitionTriggerSQL(partition string) []string {
	d := CaptureTriggers(false)[0]
	return []string{d.createSQL(partition, nil), "ALTER TABLE " + partition + " ENABLE ALWAYS TRIGGER " + d.Name}
}

// partitionTriggers is what a partition rwc creates needs of rwc's
// triggers: theirs when the flow captures by them and its target has
// them (obs.TargetTriggers; until then, rwc.capture() may not exist, and
// rwc apply gives every partition its trigger when it gives the parent).
func (f *Flow) partitionTriggers(partition string, obs Observation) []string {
	if !f.CapturesByTriggers() || !obs.TargetTriggers {
		return nil
	}
	return CapturePartitionTriggerSQL(partition)
}

// planCapture says, for a flow capturing by triggers, what rwc apply
// installs on its tables and when: after a refresh, on each table that
// lacks rwc's triggers (or has them not as rwc made them), in a
// transaction of its own; rwc's functions first when missing or not rwc's.
func (fp *FlowPlan) planCapture(f *Flow) {
	if !f.CapturesByTriggers() {
		return
	}
	cols := f.CaptureColumns()
	var logged, others []string
	for _, t := range f.CaptureTables() {
		if c, ok := cols[t]; ok {
			logged = append(logged, t+"."+pq.QuoteIdentifier(c))
		} else {
			others = append(others, t)
		}
	}
	note := "capture: triggers: after its refresh, rwc apply gives each table that lacks them rwc's triggers"
	if len(logged) > 0 {
		note += ": statement triggers with transition tables that log the values of " + strings.Join(logged, ", ") +
			" each write touched (rwc_capture_insert, _update, _delete; rwc_capture on TRUNCATE)"
	}
	if len(others) > 0 {
		note += "; on " + strings.Join(others, ", ") + " one statement trigger that logs that it changed (" +
			strings.Join(CaptureTriggerSQL("<table>", nil)[len(CaptureTriggers(true)):], "; ") + ")"
	}
	if f.Partitioned() {
		note += "; on " + f.Target() + ", partitioned, the statement trigger on every partition too (the replica trigger is cloned onto them), and on each partition rwc creates before it is attached or swapped in"
	}
	note += ". A refresh then probes a source only in the partitions its triggers logged, and not at all a table whose triggers vouch that nothing changed"
	fp.Notes = append(fp.Notes, note)
}

package compile

import (
	"sort"
	"strings"

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
// a refresh looks is seen by the next one.
const CaptureFunctionBody = `
BEGIN
	INSERT INTO rwc.change_log (relid, xid) VALUES (TG_RELID, pg_current_xact_id()) ON CONFLICT DO NOTHING;
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
const CaptureTriggerType = 4 | 8 | 16 | 32

// CaptureReplicaTriggerType is CaptureReplicaTrigger's: FOR EACH ROW (1),
// AFTER, on INSERT, DELETE and UPDATE (an apply worker's TRUNCATE fires
// the statement trigger).
const CaptureReplicaTriggerType = 1 | 4 | 8 | 16

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

// CaptureTriggerSQL (re)creates rwc's triggers on table: the statement
// trigger, firing for every session (ENABLE ALWAYS: a session with
// session_replication_role = replica writes too), and the row trigger
// for what a logical replication apply worker writes, which fires no
// statement trigger.
func CaptureTriggerSQL(table string) []string {
	return []string{
		"DROP TRIGGER IF EXISTS " + CaptureTrigger + " ON " + table,
		"CREATE TRIGGER " + CaptureTrigger + " AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON " + table +
			" FOR EACH STATEMENT EXECUTE FUNCTION rwc.capture()",
		"ALTER TABLE " + table + " ENABLE ALWAYS TRIGGER " + CaptureTrigger,
		"DROP TRIGGER IF EXISTS " + CaptureReplicaTrigger + " ON " + table,
		"CREATE TRIGGER " + CaptureReplicaTrigger + " AFTER INSERT OR UPDATE OR DELETE ON " + table +
			" FOR EACH ROW EXECUTE FUNCTION rwc.capture()",
		"ALTER TABLE " + table + " ENABLE REPLICA TRIGGER " + CaptureReplicaTrigger,
	}
}

// planCapture says, for a flow capturing by triggers, what rwc apply
// installs on its tables and when: after a refresh, on each table that
// lacks rwc's trigger (or has one not as rwc made it), in a transaction
// of its own; rwc.capture() first when it is missing or not rwc's.
func (fp *FlowPlan) planCapture(f *Flow) {
	if !f.CapturesByTriggers() {
		return
	}
	note := "capture: triggers: after its refresh, rwc apply gives each of " + strings.Join(f.CaptureTables(), ", ") +
		" that lacks them rwc's triggers (" + strings.Join(CaptureTriggerSQL("<table>"), "; ") +
		"); a refresh whose tables' triggers all vouch that nothing changed since the last one skips its probes"
	fp.Notes = append(fp.Notes, note)
}

package compile

import (
	"fmt"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
)

// Adoption is what a refresh does with a target table that exists before
// it writes: refresh it (rwc made it), adopt it (Adopt: a table Citus
// built in the place of rwc's, which the refresh verifies by its rows
// before it writes, see run's adoptRecreated), or refuse it (Refusal, in
// rwc apply's words; nothing changes). Adopting a table rwc did not make
// would let a refresh delete rows nobody asked rwc to manage.
type Adoption struct {
	Adopt   bool
	Refusal string
	// Code and At: a refusal's diagnostic in a plan, when not the
	// table's (RW503 at the table's key).
	Code string
	At   diag.Pos
}

// TargetVerdict is what a refresh does with the table its target's name
// holds now, before it changes anything: TargetAdoption, then what the
// spec asks of the table that the table is not (distribution:,
// partitioning:) or that Citus cannot make of it (changes: the column
// changes the refresh would make). rwc apply and rwc plan alike.
func (f *Flow) TargetVerdict(st FlowState, obs Observation, changes []ColumnChange) Adoption {
	a := f.TargetAdoption(st, obs)
	if a.Refusal != "" || !obs.PartitionsRead {
		// Without the partitions, the observation stopped short (a plan
		// whose query could not be described): the table's kind and
		// distribution are unknown, and refused for nothing.
		return a
	}
	for _, why := range []string{distributionAgrees(f, obs), distributedColumnKept(f, obs, changes), partitioningAgrees(f, obs)} {
		if why != "" {
			return Adoption{Refusal: why}
		}
	}
	if c := windowCollations(f, obs); c.Refusal != "" {
		return c
	}
	return a
}

// windowCollations refuses a flow whose window reads a text column under
// a nondeterministic collation, where 'emea' = 'EMEA' can hold: rwc
// compares the window's values byte by byte, as CEL does, and so does the
// target's DELETE, but the query's rows would be filtered, and its
// partitions narrowed, by the collation's equality, so the window would
// take rows that no later DELETE replaces (each refresh inserting them
// again).
func windowCollations(f *Flow, obs Observation) Adoption {
	if len(obs.Collations) == 0 {
		return Adoption{}
	}
	c := obs.Collations[0]
	col, name := f.Table.Column(c.Column), pq.QuoteIdentifier(c.Column)
	if col == nil {
		return Adoption{}
	}
	at, where := col.Pos, fmt.Sprintf("the query yields the window's column %s (%s)", c.Column, col.Pos)
	fix := fmt.Sprintf("yield it under a deterministic collation, e.g. %s COLLATE \"default\" AS %[1]s in the query's select list (rwc then recomputes the whole window: it cannot map the window onto the source's column)", name)
	if c.Target {
		at, where = f.Table.Pos, fmt.Sprintf("the target %s (%s) stores the window's column %s", f.Target(), f.Table.Pos, c.Column)
		fix = fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s COLLATE \"default\"", f.Target(), name, col.Type.Canonical)
	}
	return Adoption{Code: "RW504", At: at, Refusal: fmt.Sprintf("flow %s: %s under the nondeterministic collation %s, where values that differ byte by byte can be equal ('emea' = 'EMEA'); rwc compares the window's values byte by byte, as CEL does, so the window would take rows that no later refresh replaces; nothing was changed: %s",
		f.Name(), where, c.Collation, fix)}
}

// TargetAdoption decides it from the flow's row in rwc.flows (st) and the
// table the target's name holds now (obs.TargetOID, 0: none).
func (f *Flow) TargetAdoption(st FlowState, obs Observation) Adoption {
	switch {
	case obs.TargetOID == 0 || st.Found && obs.TargetOID == st.TargetOID:
		return Adoption{}
	case !st.Found:
		return Adoption{Refusal: fmt.Sprintf("table %s already exists and was not created by rwc (%s): rwc refuses to adopt it; drop or rename it, or choose another table name (if rwc created it and lost the flow's row in rwc.flows, rwc state check says so, and rwc state repair re-adopts it)",
			f.Target(), f.Table.Pos)}
	case obs.Citus && st.TargetGone && obs.TargetDistribution != "":
		// alter_distributed_table builds a new Citus table under the
		// name, copies the rows and drops the old one.
		return Adoption{Adopt: true}
	}
	return Adoption{Refusal: fmt.Sprintf("table %s was dropped and created again outside rwc (%s): rwc refuses to adopt the new table; drop it and rwc will create and fill it",
		f.Target(), f.Table.Pos)}
}

// distributionAgrees refuses, before anything changes, a flow whose
// distribution: the database cannot give it (no Citus), or that its target,
// already there, does not have: rwc distributes a target when it creates
// it, and does not move an existing one's rows under its readers (a
// target distributed by hand, the spec silent, is left as it is).
func distributionAgrees(f *Flow, obs Observation) string {
	d := f.Table.Distribution
	switch {
	case d == nil:
		return ""
	case !obs.Citus:
		return fmt.Sprintf("flow %s: distribution: (%s) makes the target a Citus table, but this database has no Citus (no pg_dist_partition); nothing was changed: run rwc against the Citus coordinator's database, or drop distribution: (docs/citus.md)",
			f.Name(), d.Pos)
	case obs.TargetMissing:
		return ""
	}
	want, how := d.By, fmt.Sprintf("SELECT create_distributed_table('%s', '%s')", f.Target(), d.By)
	if d.Reference {
		want, how = "reference", fmt.Sprintf("SELECT create_reference_table('%s')", f.Target())
	}
	switch obs.TargetDistribution {
	case want:
		return ""
	case "":
		return fmt.Sprintf("flow %s: distribution: (%s) asks for a target %s, but %s exists as a local table; rwc distributes a target when it creates it, and nothing was changed: distribute it yourself (%s moves its rows to the shards), then apply again",
			f.Name(), d.Pos, describeWant(want), f.Target(), how)
	}
	return fmt.Sprintf("flow %s: distribution: (%s) asks for a target %s, but %s is %s; nothing was changed: change distribution: to what the table is, or change the table (alter_distributed_table, undistribute_table; docs/citus.md)",
		f.Name(), d.Pos, describeWant(want), f.Target(), describeWant(obs.TargetDistribution))
}

// describeWant says what a distribution (a column, or "reference") is.
func describeWant(d string) string {
	if d == "reference" {
		return "that is a reference table"
	}
	return "distributed by " + d
}

// distributedColumnKept refuses, before anything changes, a column change
// that Citus cannot make: its distribution column retyped or dropped
// (Citus would fail the ALTER TABLE with an internal error).
func distributedColumnKept(f *Flow, obs Observation, changes []ColumnChange) string {
	if obs.TargetDistribution == "" || obs.TargetDistribution == "reference" {
		return ""
	}
	for _, c := range changes {
		if c.Column != obs.TargetDistribution || c.Kind == "added" {
			continue
		}
		pos := f.Table.Pos
		if col := f.Table.Column(c.Column); col != nil {
			pos = col.TypePos
		}
		return fmt.Sprintf("flow %s: column %s (%s) is %s but is the distribution column of %s, which Citus cannot retype or drop; nothing was changed: keep the column as it is, or undistribute the table (undistribute_table), change it, and distribute it again (docs/citus.md)",
			f.Name(), c.Column, pos, c.Change(), f.Target())
	}
	return ""
}

// partitioningAgrees refuses a target whose kind is not the spec's: rwc
// does not turn a plain table into a partitioned one, nor back, under its
// readers' feet (docs/concepts.md says how to do it by hand).
func partitioningAgrees(f *Flow, obs Observation) string {
	switch {
	case obs.TargetMissing || obs.Partitioned == f.Partitioned():
		return ""
	case f.Partitioned():
		return fmt.Sprintf("flow %s: partitioning: asks for a partitioned target, but %s exists as a plain table (%s); rwc does not convert a target in place, and nothing was changed: rename it aside (ALTER TABLE %s RENAME TO %s_history), run rwc apply, which creates the partitioned target and fills its window, then attach the old table's history as one partition (steps in docs/concepts.md#adopting-a-plain-target)",
			f.Name(), f.Target(), f.Table.Partitioning.Pos, f.Target(), f.Name())
	default:
		return fmt.Sprintf("flow %s: %s is a partitioned table, but the spec has no partitioning: (%s); rwc does not convert a target in place, and nothing was changed: put partitioning: back, or rename the table aside, apply, and copy the history back; see docs/concepts.md#adopting-a-plain-target",
			f.Name(), f.Target(), f.Table.Pos)
	}
}

package compile

import (
	"fmt"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
)

// analyzeDistribution checks distribution: the column it distributes by
// is the table's, every unique key holds it (Citus enforces a key shard
// by shard), and the target is not partitioned too (rwc swaps partitions
// in as local tables: not yet on Citus).
func (f *Flow) analyzeDistribution() diag.List {
	d := f.Table.Distribution
	if d == nil {
		return nil
	}
	var ds diag.List
	if f.Table.Partitioning != nil {
		ds.Errorf("RW134", d.Pos, "drop partitioning: or distribution: (a distributed target is refreshed with DELETE and INSERT … SELECT, shard by shard)",
			"distribution: and partitioning: together: rwc does not swap partitions into a distributed table yet")
		return ds
	}
	if d.Reference {
		return nil
	}
	if f.Table.Column(d.By) == nil {
		hint := "distribution.by names one of the table's columns, usually the key it shares with its fact"
		if best := diag.Closest(d.By, columnsOf(f)); best != "" {
			hint = fmt.Sprintf("did you mean %q? ", best) + hint
		}
		ds.Errorf("RW133", d.ByPos, hint, "distribution.by %q is not a column of %s", d.By, f.Name())
		return ds
	}
	return f.keysLacking("RW133", d.By, "the distribution column", "Citus enforces a unique key shard by shard, so it must hold it")
}

// distributeSQL makes the target, just created, a Citus table as
// distribution: says ("": a local table). The names are literals: Citus
// reads the table as a regclass, the column as a name, colocate_with as a
// table name.
func (f *Flow) distributeSQL() string {
	d := f.Table.Distribution
	switch {
	case d == nil:
		return ""
	case d.Reference:
		return "SELECT create_reference_table(" + pq.QuoteLiteral(f.Target()) + ")"
	case d.ColocateWith != "":
		return fmt.Sprintf("SELECT create_distributed_table(%s, %s, colocate_with => %s)", pq.QuoteLiteral(f.Target()), pq.QuoteLiteral(d.By), pq.QuoteLiteral(d.ColocateWith))
	}
	return fmt.Sprintf("SELECT create_distributed_table(%s, %s)", pq.QuoteLiteral(f.Target()), pq.QuoteLiteral(d.By))
}

// Distributed reports whether the spec makes f's target a Citus table.
func (f *Flow) Distributed() bool { return f.Table.Distribution != nil }

// describeDistribution is the plan's line for distribution: ("": none).
func (f *Flow) describeDistribution() string {
	d := f.Table.Distribution
	switch {
	case d == nil:
		return ""
	case d.Reference:
		return "a Citus reference table (a copy on every node)"
	case d.ColocateWith != "":
		return fmt.Sprintf("distributed by Citus on %s, co-located with %s", d.By, d.ColocateWith)
	}
	return "distributed by Citus on " + d.By
}

package compile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// analyzePartitioning checks partitioning: and records that the target is
// partitioned (Partitioned) only when every check passes: a refresh never
// partitions by a column lint refused.
func (f *Flow) analyzePartitioning() diag.List {
	pt := f.Table.Partitioning
	if pt == nil {
		return nil
	}
	var ds diag.List
	col := f.Table.Column(pt.By)
	switch {
	case col == nil:
		hint := "partitioning.by names one of the table's date columns"
		if best := diag.Closest(pt.By, columnsOf(f)); best != "" {
			hint = fmt.Sprintf("did you mean %q? ", best) + hint
		}
		ds.Errorf("RW125", pt.ByPos, hint, "partitioning.by %q is not a column of %s", pt.By, f.Name())
		return ds
	case col.Type.Base != "date":
		ds.Errorf("RW125", pt.ByPos, "partition by a date column (rwc supports date partition keys only); store the day as a date column and partition by it",
			"partitioning.by %q is %s, not date", pt.By, col.Type.Canonical)
		return ds
	}
	if f.PartitionBy != pt.By {
		what := "the window has no partition column (it ranges over several: set partition_by)"
		if f.PartitionBy != "" {
			what = fmt.Sprintf("the window's partition column is %s", f.PartitionBy)
		}
		ds.Errorf("RW126", pt.ByPos, "partition the target by the column the window ranges over, and name it in partition_by if the window reads more than one",
			"partitioning.by %q is not the window's partition column: %s; rwc swaps the partitions the window covers, so they must be cut along the same column", pt.By, what)
		return ds
	}
	if f.Predicate != nil {
		if w, err := f.Predicate.Resolve(predicate.Resolution{Now: time.Unix(0, 0)}); err == nil {
			if _, _, hasLo, _, ok := predicate.DateHull(w, pt.By); !ok || !hasLo {
				ds.Errorf("RW128", f.Table.ReplaceWhere.Pos, fmt.Sprintf("bound the window below on %s (%s >= date_add(current_date(), -7), say), or drop partitioning:", pt.By, pt.By),
					"the window has no lower bound on %s: rwc cannot tell which partitions to create for it", pt.By)
			}
		}
	}
	ds = append(ds, f.keysLacking("RW127", pt.By, "the partition key", "PostgreSQL requires a unique key of a partitioned table to include it")...)
	if !ds.HasErrors() {
		f.partitioned = true
	}
	return ds
}

// keysLacking reports, under code, each unique key of f (its primary
// key, its unique indexes) that does not hold col (what: what col is to
// the table), and why it must.
func (f *Flow) keysLacking(code, col, what, why string) diag.List {
	var ds diag.List
	for _, ix := range f.indexes {
		if !ix.Unique || slices.Contains(ix.Columns, col) {
			continue
		}
		key, list := "unique index", "columns"
		if ix.Primary {
			key, list = "primary key", "primary_key"
		}
		ds.Errorf(code, ix.Pos, fmt.Sprintf("add %s to the key (%s: [%s])", col, list, strings.Join(append(slices.Clone(ix.Columns), col), ", ")),
			"the %s (%s) does not include %s %s: %s", key, strings.Join(ix.Columns, ", "), what, col, why)
	}
	return ds
}

func columnsOf(f *Flow) []string {
	names := make([]string, len(f.Table.Columns))
	for i, c := range f.Table.Columns {
		names[i] = c.Name
	}
	return names
}

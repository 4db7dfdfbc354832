package compile

import (
	"fmt"

	"github.com/lib/pq"
)

// PostgreSQL 15 cannot CREATE INDEX CONCURRENTLY on a partitioned table.
// On a partitioned target that exists, rwc adds an index in steps that
// never lock its readers out: the parent's index alone, invalid at first
// (CREATE INDEX … ON ONLY), then each partition's, built concurrently and
// attached to it (ALTER INDEX … ATTACH PARTITION); the parent's index is
// valid once every partition has its own. The partitions' indexes get the
// names a swap gives them (IndexName of the partition).

// PartitionedIndexChanges is IndexChanges for a partitioned target with
// partitions parts.
func (f *Flow) PartitionedIndexChanges(have []CatalogIndex, parts []PartitionBound) []IndexChange {
	changes := f.IndexChanges(have)
	byName := map[string]Index{}
	for _, ix := range f.indexes {
		byName[ix.Name] = ix
	}
	for i, c := range changes {
		switch c.Kind {
		case IndexAdded, IndexRebuilt, IndexChanged:
			ix := byName[c.Name]
			if ix.Primary {
				changes[i].SQL = []string{}
				changes[i].Note = "not made: rwc does not add a primary key to a partitioned target that exists (ALTER TABLE … ADD PRIMARY KEY would lock it for the whole build); add it yourself, or recreate the target"
				continue
			}
			var sql []string
			if c.Kind == IndexRebuilt {
				sql = append(sql, "DROP INDEX IF EXISTS "+f.qualified(c.Name)) // the invalid parent index, with its attached partitions' indexes
			}
			sql = append(sql, f.onlySQL(ix))
			for _, p := range parts {
				sql = append(sql, f.partitionIndexSQL(ix, p.Name)...)
			}
			if c.Kind == IndexChanged {
				sql = append(sql, "DROP INDEX IF EXISTS "+f.qualified(c.From))
			}
			changes[i].SQL = sql
		case IndexDropped:
			if c.Primary {
				continue // ALTER TABLE … DROP CONSTRAINT works on a partitioned table
			}
			// DROP INDEX CONCURRENTLY does not work on a partitioned index;
			// dropping it changes only the catalog, under a brief lock.
			changes[i].SQL = []string{"DROP INDEX IF EXISTS " + f.qualified(c.Name)}
		}
	}
	return changes
}

// onlySQL creates ix on the parent alone: invalid until every partition
// has its index attached.
func (f *Flow) onlySQL(ix Index) string {
	verb := "CREATE INDEX"
	if ix.Unique {
		verb = "CREATE UNIQUE INDEX"
	}
	s := fmt.Sprintf("%s IF NOT EXISTS %s ON ONLY %s USING %s (%s)", verb, pq.QuoteIdentifier(ix.Name), f.Target(), ix.Using, ix.quotedColumns())
	if ix.WhereSQL != "" {
		s += " WHERE " + ix.WhereSQL
	}
	return s
}

// partitionIndexSQL builds ix on one partition, concurrently, and
// attaches it to the parent's index. A leftover of an interrupted build
// (not attached, perhaps invalid) is dropped first.
func (f *Flow) partitionIndexSQL(ix Index, partition string) []string {
	name := IndexName(partition, ix)
	verb := "CREATE INDEX CONCURRENTLY"
	if ix.Unique {
		verb = "CREATE UNIQUE INDEX CONCURRENTLY"
	}
	create := fmt.Sprintf("%s %s ON %s USING %s (%s)", verb, pq.QuoteIdentifier(name), f.qualified(partition), ix.Using, ix.quotedColumns())
	if ix.WhereSQL != "" {
		create += " WHERE " + ix.WhereSQL
	}
	return []string{
		"DROP INDEX CONCURRENTLY IF EXISTS " + f.qualified(name),
		create,
		fmt.Sprintf("ALTER INDEX %s ATTACH PARTITION %s", f.qualified(ix.Name), f.qualified(name)),
	}
}

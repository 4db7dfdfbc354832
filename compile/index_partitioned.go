package compile

import (
	"fmt"
	"strings"

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
				drop := c.From // the key it replaces
				if c.Kind == IndexRebuilt {
					drop = c.Name
				}
				changes[i].SQL = f.partitionedPrimarySQL(ix, parts, drop)
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

// NotNullCheck is the constraint that proves a partition's key columns
// hold no NULL, for the primary key rwc adds to it.
const NotNullCheck = "rwc_primary_key_not_null"

// partitionedPrimarySQL adds the primary key ix to a partitioned target
// that exists, building no index under a lock that readers wait for (ALTER
// TABLE … ADD PRIMARY KEY alone would build every partition's under the
// parent's ACCESS EXCLUSIVE lock). First, on each partition, while readers
// and writers go on: a CHECK, validated, proves its key columns hold no
// NULL, and its unique index is built concurrently; a NULL or a duplicate
// fails here, before anything is dropped. Then the key it replaces (drop:
// a changed key, or an invalid one a failed build left; the partitions'
// go with it: a table has one primary key) is dropped, each partition's
// index is made its key (a catalog change under a brief lock of the
// partition: the CHECK spares the NOT NULL its scan), and the parent's key
// attaches them all, under a brief lock of the parent. A leftover of an
// interrupted run on a partition is dropped first.
func (f *Flow) partitionedPrimarySQL(ix Index, parts []PartitionBound, drop string) []string {
	nn := make([]string, len(ix.Columns))
	for i, c := range ix.Columns {
		nn[i] = pq.QuoteIdentifier(c) + " IS NOT NULL"
	}
	check := pq.QuoteIdentifier(NotNullCheck)
	var built, keyed []string
	for _, p := range parts {
		part, name := f.qualified(p.Name), pq.QuoteIdentifier(IndexName(p.Name, ix))
		built = append(built,
			fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s, DROP CONSTRAINT IF EXISTS %s", part, check, name),
			"DROP INDEX CONCURRENTLY IF EXISTS "+f.qualified(IndexName(p.Name, ix)),
			fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s) NOT VALID", part, check, strings.Join(nn, " AND ")),
			fmt.Sprintf("ALTER TABLE %s VALIDATE CONSTRAINT %s", part, check),
			fmt.Sprintf("CREATE UNIQUE INDEX CONCURRENTLY %s ON %s USING btree (%s)", name, part, ix.quotedColumns()))
		// Two statements: a DROP in the key's ALTER would run before the
		// key's NOT NULL is checked, which would then scan.
		keyed = append(keyed,
			fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY USING INDEX %s", part, name, name),
			fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", part, check))
	}
	sql := built
	if drop != "" {
		sql = append(sql, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", f.Target(), pq.QuoteIdentifier(drop)))
	}
	sql = append(sql, keyed...)
	return append(sql, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY (%s)", f.Target(), pq.QuoteIdentifier(ix.Name), ix.quotedColumns()))
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

package compile

// planIndexes says what becomes of f's indexes, and adds their SQL: built
// with a target the refresh creates (in its transaction), else compared
// with the target's (the catalog's, read by a plan with a database; without
// one, those the deployed spec old gave it).
func (fp *FlowPlan) planIndexes(f, old *Flow, obs Observation, creating bool) {
	switch {
	case creating:
		for _, ix := range f.indexes {
			c := IndexChange{Kind: IndexAdded, Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique, Primary: ix.Primary,
				Using: ix.Using, Where: ix.Where, Default: ix.Default, SQL: []string{f.CreateSQL(ix, false)}}
			if ix.Default {
				c.Note = defaultNote
			}
			fp.Indexes = append(fp.Indexes, c)
		}
	case obs.IndexesRead && f.Partitioned():
		fp.Indexes = f.PartitionedIndexChanges(obs.Indexes, obs.Partitions)
	case obs.IndexesRead:
		fp.Indexes = f.IndexChanges(obs.Indexes)
	case old != nil:
		fp.Indexes = f.IndexChanges(old.AssumedCatalog())
	}
	built := false
	for _, c := range fp.Indexes {
		fp.SQL = append(fp.SQL, c.SQL...)
		built = built || len(c.SQL) > 0
	}
	if built && !creating {
		fp.Notes = append(fp.Notes, "the index changes run before the refresh, outside its transaction, each statement on its own (CREATE and DROP INDEX CONCURRENTLY: readers and writers of the target go on); they touch no row. A build that fails leaves an invalid index, which the next rwc apply drops and builds again")
	}
}

// IndexDefinitionChanges are the index changes between the deployed
// definition old and f, as plan changes (index_added:NAME, …).
func (f *Flow) IndexDefinitionChanges(old *Flow) Changes {
	var out Changes
	for _, c := range f.IndexChanges(old.AssumedCatalog()) {
		switch c.Kind {
		case IndexAdded:
			out = append(out, Change{Kind: ChangeIndexAdded, Column: c.Name})
		case IndexDropped:
			out = append(out, Change{Kind: ChangeIndexDropped, Column: c.Name})
		case IndexChanged:
			out = append(out, Change{Kind: ChangeIndexChanged, Column: c.Name})
		}
	}
	return out
}

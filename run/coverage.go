package run

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// ColumnCoverage says for which partition-column ranges a target column
// has been computed: by window refreshes and backfills since the column
// was added. Older rows hold NULL there.
type ColumnCoverage struct {
	Column string `json:"column"`
	Ranges string `json:"ranges"`
}

// Coverage replays the flow's successful refreshes: each filled the
// columns it recorded over its window's range on the partition column.
func Coverage(ctx context.Context, db *sql.DB, f *compile.Flow) (_ []ColumnCoverage, err error) {
	defer func() { err = lockTimeout(ctx, db, "the event log", stateRels, 0, "nothing was read", err) }()
	if f.PartitionBy == "" {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT coalesce(predicate_cel, ''), coalesce(details->'columns', '[]')
		FROM rwc.events WHERE flow = $1 AND kind = 'planning_information' ORDER BY id`, f.Name())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	filled := map[string][]*predicate.Predicate{}
	for rows.Next() {
		var cel, cols string
		if err := rows.Scan(&cel, &cols); err != nil {
			return nil, err
		}
		var names []string
		if json.Unmarshal([]byte(cols), &names) != nil || cel == "" {
			continue
		}
		w, ok := f.StoredWindow(compile.FlowState{PredicateCEL: cel})
		if !ok {
			continue
		}
		for _, n := range names {
			filled[n] = append(filled[n], w)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []ColumnCoverage
	for _, c := range f.Table.Columns {
		out = append(out, ColumnCoverage{Column: c.Name, Ranges: predicate.Coverage(filled[c.Name], f.PartitionBy)})
	}
	return out, nil
}

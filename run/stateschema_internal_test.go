package run

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// The declared state schema (stateSchema) is what the migrations build, at
// every version: the state of version v has exactly the tables, columns,
// keys and indexes declared with since <= v, and the current one nothing
// undeclared. Migrate relies on it to tell an old state (migrated) from a
// damaged one (refused), and rwc state repair to recreate what is missing.
func TestStateSchemaMatchesMigrations(t *testing.T) {
	ctx := context.Background()
	for v := 0; v <= stateVersion; v++ {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) {
			db, _ := pgtest.DB(t)
			pgtest.Exec(t, db, `CREATE SCHEMA rwc; CREATE TABLE rwc.schema_version (version integer NOT NULL); INSERT INTO rwc.schema_version VALUES (0)`)
			for i := 0; i < v; i++ {
				pgtest.Exec(t, db, migrations[i])
			}
			pgtest.Exec(t, db, `UPDATE rwc.schema_version SET version = $1`, v)
			cat, err := readCatalog(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if ps := cat.schemaProblems(v); len(ps) > 0 {
				t.Fatalf("the migrations to version %d build what stateSchema does not say: %+v", v, ps)
			}
			if err := Migrate(ctx, db); err != nil {
				t.Fatalf("Migrate from version %d: %v", v, err)
			}
			if cat, err = readCatalog(ctx, db); err != nil {
				t.Fatal(err)
			}
			if ps := cat.schemaProblems(stateVersion); len(ps) > 0 {
				t.Fatalf("after Migrate: %+v", ps)
			}
		})
	}
	// Nothing undeclared: every column and index of a migrated state.
	db, _ := pgtest.DB(t)
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	cat, err := readCatalog(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for table, cols := range cat.tables {
		for c := range cols {
			got = append(got, table+"."+c)
		}
		for _, ix := range cat.indexes[table] {
			got = append(got, table+" "+ix.kind+" "+strings.Join(ix.cols, ",")+" "+ix.ref)
		}
	}
	for _, tbl := range stateSchema {
		for _, c := range tbl.columns {
			want = append(want, tbl.name+"."+c.name)
		}
		for _, k := range tbl.keys {
			want = append(want, tbl.name+" "+k.kind+" "+strings.Join(k.cols, ",")+" "+k.ref)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("a migrated state has:\n  %s\nstateSchema declares:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// A repair recreates every table as the migrations made it.
	pgtest.Exec(t, db, `DROP SCHEMA rwc CASCADE; CREATE SCHEMA rwc`)
	for _, tbl := range stateSchema {
		pgtest.Exec(t, db, tbl.createSQL())
	}
	if cat, err = readCatalog(ctx, db); err != nil {
		t.Fatal(err)
	}
	if ps := cat.schemaProblems(stateVersion); len(ps) > 0 {
		t.Fatalf("the tables stateSchema creates: %+v", ps)
	}
}

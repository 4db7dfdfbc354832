package run

import (
	"context"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

func TestCheckServerVersion(t *testing.T) {
	for _, c := range []struct {
		num int
		ok  bool
	}{{130012, false}, {90624, false}, {140000, true}, {150018, true}, {170002, true}} {
		err := checkServerVersion(c.num)
		if (err == nil) != c.ok {
			t.Errorf("checkServerVersion(%d) = %v, want ok %v", c.num, err, c.ok)
		}
	}
	if err := checkServerVersion(130012); err == nil || err.Error() != "the database runs PostgreSQL 13 (server_version_num 130012); rwc needs PostgreSQL 14 or newer (nothing was changed)" {
		t.Errorf("message: %v", err)
	}
}

// An older rwc refuses a state that a newer one wrote, rather than
// misreading it. The migration to version 5 clears the fingerprints of the
// flows whose partial-rewrite marks version 4 stored without counts, and
// keeps the others'.
func TestMigrateVersions(t *testing.T) {
	db, _ := pgtest.DB(t)
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, db, `INSERT INTO rwc.fingerprints (flow, source, whole, value, n, h) VALUES
		('old', '', true, '', 0, 0), ('old', '', true, 'rewritten', 2, 700), ('old', '', false, '2026-03-09', -1, 0),
		('new', '', true, '', 0, 0), ('new', '', true, 'rewritten', 2, 700), ('new', '', false, '2026-03-09', -3, 2)`)
	// As version 4 left it: without what versions 6, 7 and 8 added.
	pgtest.Exec(t, db, `DROP TABLE rwc.expectation_results, rwc.change_log, rwc.captures, rwc.change_values; UPDATE rwc.schema_version SET version = 4`)
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var version int
	var flows string
	if err := db.QueryRow(`SELECT (SELECT version FROM rwc.schema_version), (SELECT string_agg(DISTINCT flow, ',') FROM rwc.fingerprints)`).Scan(&version, &flows); err != nil {
		t.Fatal(err)
	}
	if version != stateVersion || flows != "new" {
		t.Errorf("after migrating from 4: version %d, fingerprints of %q; want %d, of \"new\" only", version, flows, stateVersion)
	}
	pgtest.Exec(t, db, `UPDATE rwc.schema_version SET version = version + 1`)
	if err := Migrate(ctx, db); err == nil || !strings.Contains(err.Error(), "newer than this rwc understands") {
		t.Errorf("Migrate on a newer state: %v, want a refusal", err)
	}
}

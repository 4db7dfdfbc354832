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
// misreading it; the migration to version 5 keeps the fingerprints.
func TestMigrateVersions(t *testing.T) {
	db, _ := pgtest.DB(t)
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, db, `INSERT INTO rwc.fingerprints (flow, source, whole, value, n, h) VALUES ('f', '', false, '2026-03-09', -1, 0)`)
	pgtest.Exec(t, db, `UPDATE rwc.schema_version SET version = 4`)
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var version, marks int
	if err := db.QueryRow(`SELECT (SELECT version FROM rwc.schema_version), (SELECT count(*) FROM rwc.fingerprints)`).Scan(&version, &marks); err != nil {
		t.Fatal(err)
	}
	if version != stateVersion || marks != 1 {
		t.Errorf("after migrating from 4: version %d, %d fingerprint rows; want %d, 1", version, marks, stateVersion)
	}
	pgtest.Exec(t, db, `UPDATE rwc.schema_version SET version = version + 1`)
	if err := Migrate(ctx, db); err == nil || !strings.Contains(err.Error(), "newer than this rwc understands") {
		t.Errorf("Migrate on a newer state: %v, want a refusal", err)
	}
}

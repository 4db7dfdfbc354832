package run

import (
	"strings"
	"testing"
)

// ChooseDatabase falls back to the local default only where nothing says a
// database was meant to be named.
func TestChooseDatabase(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flag     string
		env      map[string]string
		planning bool
		dsn      string
		err      string // a substring; "" no error
	}{
		{name: "nothing set: local", dsn: ""},
		{name: "flag", flag: "postgres://f", env: map[string]string{"CI": "true", "RWC_DATABASE_URL": ""}, dsn: "postgres://f"},
		{name: "variable", env: map[string]string{"CI": "true", "RWC_DATABASE_URL": "postgres://v"}, dsn: "postgres://v"},
		{name: "flag over variable", flag: "postgres://f", env: map[string]string{"RWC_DATABASE_URL": "postgres://v"}, dsn: "postgres://f"},
		{name: "CI empty is not CI", env: map[string]string{"CI": ""}, dsn: ""},
		{name: "CI=false is not CI", env: map[string]string{"CI": "false"}, dsn: ""},
		{name: "CI", env: map[string]string{"CI": "1"}, err: "CI is set (CI=1) and no database is named (RWC_DATABASE_URL is not set, no --dsn, and no PGHOST, PGDATABASE or PGSERVICE), so rwc will not fall back"},
		{name: "CI, plan", env: map[string]string{"CI": "true"}, planning: true, err: "so rwc plan will not plan without a database"},
		{name: "empty variable", env: map[string]string{"RWC_DATABASE_URL": ""}, err: "RWC_DATABASE_URL is set but empty"},
		{name: "empty variable, plan", env: map[string]string{"RWC_DATABASE_URL": ""}, planning: true, err: "pass --no-database"},
		{name: "empty variable in CI", env: map[string]string{"CI": "true", "RWC_DATABASE_URL": ""}, err: "RWC_DATABASE_URL is set but empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			dsn, err := ChooseDatabase(tc.flag, lookup, tc.planning)
			switch {
			case tc.err == "" && (err != nil || dsn != tc.dsn):
				t.Errorf("ChooseDatabase = %q, %v; want %q", dsn, err, tc.dsn)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || dsn != ""):
				t.Errorf("ChooseDatabase = %q, %v; want an error with %q", dsn, err, tc.err)
			}
		})
	}
}

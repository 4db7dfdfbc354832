package run

import (
	"fmt"
	"strings"

	"github.com/rwc-dev/rwc/run/libpq"
)

// Source names where a connection string ChooseDatabase chose came from,
// for messages (it never holds a password): --dsn, RWC_DATABASE_URL, or
// the PG* variables that named the server.
func Source(flag string, lookup func(string) (string, bool)) string {
	if flag != "" {
		return "--dsn"
	}
	if url, _ := lookup("RWC_DATABASE_URL"); url != "" {
		return "RWC_DATABASE_URL"
	}
	if vars := libpq.NamingVars(lookup); len(vars) > 0 {
		return strings.Join(vars, ", ") + ", as psql reads them"
	}
	return "the local PostgreSQL"
}

// ChooseDatabase decides which database a command works on: flag (--dsn)
// when given, else $RWC_DATABASE_URL when it is not empty, else, when
// PGHOST, PGHOSTADDR, PGPORT, PGDATABASE or PGSERVICE is set, the server
// they name, as psql would connect (libpq.EnvDSN: the driver reads the
// rest of the PG* variables, the service file and the password file), else
// "" for the local default (the local PostgreSQL under .rwc/, or, for rwc
// plan, none unless it is running). lookup is os.LookupEnv.
//
// The local default is refused, with an error saying why and what to do,
// when the environment says a database was meant to be named: when
// RWC_DATABASE_URL is set but empty (a missing or misnamed secret, a fork's
// pull request, which gets no secrets), or when CI is set to anything. Run
// there, rwc would otherwise apply to a throwaway local server, or plan
// against nothing and show every flow as new. planning words the advice
// for rwc plan, which can plan without a database on request
// (--no-database).
func ChooseDatabase(flag string, lookup func(string) (string, bool), planning bool) (string, error) {
	if flag != "" {
		return flag, nil
	}
	url, set := lookup("RWC_DATABASE_URL")
	if url != "" {
		return url, nil
	}
	if !set && len(libpq.NamingVars(lookup)) > 0 {
		return libpq.EnvDSN(lookup), nil
	}
	ci, _ := lookup("CI")
	if !set && !inCI(ci) {
		return "", nil
	}
	var why string
	if set {
		why = "RWC_DATABASE_URL is set but empty (a secret that is missing or misnamed, or withheld from a fork's pull request)"
	} else {
		why = fmt.Sprintf("CI is set (CI=%s) and no database is named (RWC_DATABASE_URL is not set, no --dsn, and no PGHOST, PGDATABASE or PGSERVICE)", ci)
	}
	fix := "set RWC_DATABASE_URL to the database's URL, or pass --dsn URL"
	if planning {
		return "", fmt.Errorf("%s, so rwc plan will not plan without a database, which would show every flow as new: %s; or pass --no-database to plan against --base REV, or from nothing", why, fix)
	}
	if set {
		fix += " (unset RWC_DATABASE_URL to use the local PostgreSQL under .rwc/)"
	} else {
		fix += ` (for the local PostgreSQL under .rwc/, pass --dsn "$(rwc local start)")`
	}
	return "", fmt.Errorf("%s, so rwc will not fall back to the local PostgreSQL: %s", why, fix)
}

// inCI reads $CI as CI systems set it: CI=true, CI=1, or a system's name;
// empty, false and 0 say it is not CI.
func inCI(ci string) bool {
	switch strings.ToLower(strings.TrimSpace(ci)) {
	case "", "false", "0", "no":
		return false
	}
	return true
}

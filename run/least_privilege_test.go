package run_test

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// recipeSQL is the one ```sql block of docs/least-privilege.md, as the
// docs show it: the test runs what users copy.
func recipeSQL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/least-privilege.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```sql\n(.*?)^```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/least-privilege.md has %d ```sql blocks, want the recipe alone", len(blocks))
	}
	return blocks[0][1]
}

// asRole is dsn with the user replaced (the test cluster trusts every
// connection, so no password is needed).
func asRole(t *testing.T, dsn, role string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

const leastPrivilegeSources = `
	CREATE SCHEMA raw;
	CREATE TABLE raw.events (event_date date, page text);
	CREATE TABLE raw.pages (page text, title text);
	INSERT INTO raw.events VALUES ('2026-03-08', 'home'), ('2026-03-09', 'home'), ('2026-03-09', 'cart');
	INSERT INTO raw.pages VALUES ('home', 'Home'), ('cart', 'Cart');
	-- What a spec may call to write a source: an ordinary function (SECURITY
	-- INVOKER), which EXECUTE to PUBLIC lets every role run.
	CREATE FUNCTION raw.log_view(p text) RETURNS text LANGUAGE plpgsql AS
		$$BEGIN INSERT INTO raw.events VALUES ('2000-01-01', p); RETURN p; END$$;`

const leastPrivilegeSpec = `pipeline: views
schema: analytics
tables:
  page_views:
    replace_where: event_date >= date('2026-03-01')
    columns:
      event_date: date
      title: text
      views: bigint
    query: |
      SELECT e.event_date, p.title, count(*) AS views
      FROM raw.events e JOIN raw.pages p ON p.page = e.page
      GROUP BY e.event_date, p.title
`

const writingSpec = `pipeline: sneaky
schema: analytics
tables:
  sneaky:
    replace_where: event_date >= date('2026-03-01')
    columns:
      event_date: date
      page: text
    query: SELECT event_date, raw.log_view(page) AS page FROM raw.events
`

// TestLeastPrivilegeRecipe proves docs/least-privilege.md: after its SQL,
// rwc_deployer can apply and refresh a pipeline that reads the sources, but
// a spec whose query writes a source through a function fails and changes
// nothing, and the role cannot write the sources itself.
func TestLeastPrivilegeRecipe(t *testing.T) {
	db, dsn := pgtest.DB(t)
	mustExec(t, db, leastPrivilegeSources)
	// Roles are the cluster's, not the database's: remove this one (and
	// what it owns and was granted here) before the database goes.
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY rwc_owner CASCADE`, `DROP ROLE IF EXISTS rwc_owner`,
			`DROP OWNED BY rwc_planner CASCADE`, `DROP ROLE IF EXISTS rwc_planner`,
			`DROP OWNED BY rwc_deployer CASCADE`, `DROP ROLE IF EXISTS rwc_deployer`} {
			if _, err := db.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	mustExec(t, db, recipeSQL(t))
	role := asRole(t, dsn, "rwc_deployer")

	var super, createRole, createDB bool
	if err := db.QueryRow(`SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = 'rwc_deployer'`).Scan(&super, &createRole, &createDB); err != nil {
		t.Fatal(err)
	}
	if super || createRole || createDB {
		t.Fatalf("rwc_deployer: superuser %v, createrole %v, createdb %v; want none", super, createRole, createDB)
	}

	good := writeSpecs(t, map[string]string{"views.yaml": leastPrivilegeSpec})
	if code, out := runRWC(t, role, "apply", "--allow-dirty", good); code != 0 {
		t.Fatalf("rwc apply as rwc_deployer exited %d:\n%s", code, out)
	}
	mustExec(t, db, `INSERT INTO raw.events VALUES ('2026-03-10', 'cart')`)
	if code, out := runRWC(t, role, "apply", "--allow-dirty", good); code != 0 {
		t.Fatalf("second rwc apply as rwc_deployer exited %d:\n%s", code, out)
	}
	if got := pgtest.Rows(t, db, `SELECT event_date || ' ' || title || ' ' || views AS x FROM analytics.page_views`); strings.Join(got, "; ") !=
		"2026-03-08 Home 1; 2026-03-09 Cart 1; 2026-03-09 Home 1; 2026-03-10 Cart 1" {
		t.Errorf("page_views after two applies: %q", got)
	}

	notOwned(t, db, role, good)

	// rwc_planner plans, against the deployed state (nothing to do, then a
	// changed window), and can write nothing: not a target, not rwc's
	// state, not a source.
	planner := asRole(t, dsn, "rwc_planner")
	if code, out := runRWC(t, planner, "plan", "--detailed-exitcode", good); code != 0 {
		t.Errorf("rwc plan as rwc_planner of what is deployed: exit %d, want 0:\n%s", code, out)
	}
	wider := writeSpecs(t, map[string]string{"views.yaml": strings.Replace(leastPrivilegeSpec, "2026-03-01", "2026-02-01", 1)})
	if code, out := runRWC(t, planner, "plan", "--detailed-exitcode", wider); code != 2 || !strings.Contains(out, "page_views") {
		t.Errorf("rwc plan as rwc_planner of a wider window: exit %d, want 2:\n%s", code, out)
	}
	asPlanner, err := sql.Open("postgres", planner)
	if err != nil {
		t.Fatal(err)
	}
	defer asPlanner.Close()
	for _, q := range []string{
		`DELETE FROM analytics.page_views`,
		`INSERT INTO analytics.page_views VALUES ('2000-01-01', 'x', 1)`,
		`DELETE FROM rwc.deployments`,
		`INSERT INTO raw.events VALUES ('2000-01-01', 'x')`,
		`CREATE TABLE analytics.planted (x int)`,
		`SELECT raw.log_view('x')`,
	} {
		_, err := asPlanner.Exec(q)
		var pe *pq.Error
		if err == nil || !errors.As(err, &pe) || (pe.Code != "25006" && pe.Code != "42501") {
			t.Errorf("as rwc_planner, %s: %v; want a read-only transaction or permission denied", q, err)
		}
	}

	before := pgtest.Rows(t, db, `SELECT event_date || ' ' || page AS x FROM raw.events`)
	sneaky := writeSpecs(t, map[string]string{"views.yaml": leastPrivilegeSpec, "sneaky.yaml": writingSpec})
	code, out := runRWC(t, role, "apply", "--allow-dirty", sneaky)
	if code != 1 || !strings.Contains(out, "permission denied for table events") || !strings.Contains(out, "warning RW405") {
		t.Errorf("apply of a query writing through a function: exit %d, want 1 with RW405 and permission denied:\n%s", code, out)
	}
	if after := pgtest.Rows(t, db, `SELECT event_date || ' ' || page AS x FROM raw.events`); strings.Join(after, ";") != strings.Join(before, ";") {
		t.Errorf("the source changed: %q, was %q", after, before)
	}

	as, err := sql.Open("postgres", role)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	for _, q := range []string{
		`INSERT INTO raw.events VALUES ('2000-01-01', 'x')`,
		`UPDATE raw.events SET page = 'x'`,
		`DELETE FROM raw.events`,
		`TRUNCATE raw.events`,
		`ALTER TABLE raw.events ADD COLUMN x int`,
		`CREATE TABLE raw.planted (x int)`,
		`CREATE TABLE public.planted (x int)`,
		`SELECT raw.log_view('x')`,
	} {
		_, err := as.Exec(q)
		var pe *pq.Error
		if err == nil || !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("as rwc_deployer, %s: %v; want permission denied", q, err)
		}
	}
}

// notOwned: rwc_deployer gave the target it created rwc's autovacuum
// settings; once another role owns it (rwc_deployer granted what a refresh
// needs), they are not rwc's to set: a refresh leaves the table's settings
// alone (ALTER TABLE … SET would fail), and rwc status says why.
func notOwned(t *testing.T, db *sql.DB, role, specs string) {
	t.Helper()
	options := func() string {
		var o string
		if err := db.QueryRow(`SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'analytics.page_views'::regclass`).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	if got := options(); !strings.Contains(got, "autovacuum_vacuum_scale_factor=0") {
		t.Errorf("the target rwc_deployer created and owns has storage settings %q, want rwc's", got)
	}
	mustExec(t, db, `CREATE ROLE rwc_owner NOLOGIN;
		ALTER TABLE analytics.page_views OWNER TO rwc_owner;
		ALTER TABLE analytics.page_views RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
		GRANT SELECT, INSERT, DELETE ON analytics.page_views TO rwc_deployer;
		INSERT INTO raw.events VALUES ('2026-03-10', 'home')`)
	if code, out := runRWC(t, role, "apply", "--allow-dirty", specs); code != 0 {
		t.Fatalf("rwc apply as rwc_deployer of a target rwc_owner owns: exit %d:\n%s", code, out)
	}
	if got := options(); got != "" {
		t.Errorf("a refresh gave the target rwc does not own storage settings %q", got)
	}
	if code, out := runRWC(t, role, "status", "--format", "json", specs); code != 0 || !strings.Contains(out, "rwc does not own the target") {
		t.Errorf("rwc status of a target rwc does not own: exit %d, want it to say so:\n%s", code, out)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
}

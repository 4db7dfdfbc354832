package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
)

// The seeds' orders_enriched flow (the short form, no column list) and
// their three overrides, imported with the columns typed by the database:
// the spec lints clean, and each refresh leaves exactly the rows the
// seeds' semantics give, computed here straight from the sources. The
// inputs are the import corpus's.
func seedInput(t *testing.T, name, file string) databricks.Input {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "compile", "databricks", "testdata", "import", file))
	if err != nil {
		t.Fatal(err)
	}
	return databricks.Input{Name: name, Src: b}
}

func TestImportedSeedRefresh(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	e.exec(`CREATE TABLE orders_fct (order_id bigint PRIMARY KEY, date date NOT NULL, region text, product_id int, qty integer, price numeric(10,2));
		CREATE TABLE product_dim (product_id int PRIMARY KEY, product_name text);
		INSERT INTO product_dim VALUES (1, 'tea'), (2, 'coffee');
		INSERT INTO orders_fct SELECT n, DATE '2019-12-01' + (n * 7) % 2380, (ARRAY['asia', 'emea', 'amer'])[1 + n % 3], 1 + n % 2, n % 5, n % 97
			FROM generate_series(1, 3000) n`)
	res := databricks.Import([]databricks.Input{seedInput(t, "orders.sql", "orders_enriched_short/input.sql"), seedInput(t, "overrides.json", "orders_overrides/overrides.json")},
		databricks.Options{At: now, Describe: func(q string) ([]databricks.Column, error) {
			return run.DescribeQuery(context.Background(), e.db, q)
		}})
	if res.Diagnostics.HasErrors() {
		t.Fatalf("import: %v", res.Diagnostics)
	}
	files := map[string]string{}
	for _, f := range res.Files {
		files[f.Path] = string(f.Content)
	}
	// The long form (CREATE STREAMING TABLE, then CREATE FLOW … INSERT INTO
	// … BY NAME REPLACE WHERE) imports to the same spec, so the refreshes
	// below are its too.
	long := databricks.Import([]databricks.Input{seedInput(t, "orders.sql", "orders_enriched_long/input.sql")},
		databricks.Options{At: now, Describe: func(q string) ([]databricks.Column, error) {
			return run.DescribeQuery(context.Background(), e.db, q)
		}})
	if long.Diagnostics.HasErrors() || len(long.Files) != 1 || files[long.Files[0].Path] != string(long.Files[0].Content) {
		t.Fatalf("the long form imported otherwise (%v):\n%v", long.Diagnostics, long.Files)
	}
	p := project(t, files)
	f := p.Flow("orders_enriched")
	if f == nil || len(p.Spec.Backfills) != 3 {
		t.Fatalf("import gave %v", files)
	}
	target := `SELECT order_id, date, region, product_name, qty, price FROM orders_enriched ORDER BY order_id`
	source := func(cond string) string {
		return `SELECT o.order_id, o.date, o.region, p.product_name, o.qty, o.price FROM orders_fct o JOIN product_dim p ON o.product_id = p.product_id WHERE ` + cond
	}
	want := func(cond string) []string { return e.rows("SELECT * FROM (" + source(cond) + ") s ORDER BY order_id") }

	r := e.runner(now)
	refresh(t, r, reqWindow(f))
	// The last 7 days: current_date() is 2026-06-01.
	week := "o.date >= DATE '2026-05-25'"
	if got := e.rows(target); len(got) == 0 || strings.Join(got, "\n") != strings.Join(want(week), "\n") {
		t.Fatalf("after the first refresh:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want(week), "\n"))
	}

	// The history override (2020–2024) adds those years; the window stays.
	history := backfillFile(t, p.Spec, "2026-06-01-orders_enriched.yaml")
	if history.Where.Value != "date >= date('2020-01-01') && date <= date('2024-12-31')" {
		t.Fatalf("the history override imported as %q", history.Where.Value)
	}
	refresh(t, r, run.Request{Flow: f, Mode: run.Override, Where: where(t, f, history.Where.Value)})
	years := week + " OR o.date BETWEEN DATE '2020-01-01' AND DATE '2024-12-31'"
	pgtestSame(t, e, target, want(years))

	// A renamed product: the asia override of the last 30 days (resolved
	// at import: from 2026-05-02) recomputes only asia's rows from then.
	e.exec(`UPDATE product_dim SET product_name = 'green tea' WHERE product_id = 1`)
	asia := backfillFile(t, p.Spec, "2026-06-01-orders_enriched-3.yaml")
	if asia.Where.Value != `date >= date('2026-05-02') && region == "asia"` {
		t.Fatalf("the asia override imported as %q", asia.Where.Value)
	}
	refresh(t, r, run.Request{Flow: f, Mode: run.Override, Where: where(t, f, asia.Where.Value)})
	renamed := `SELECT order_id, date, region,
			CASE WHEN date >= DATE '2026-05-02' AND region = 'asia' THEN product_name
			     WHEN product_name = 'green tea' THEN 'tea' ELSE product_name END, qty, price
		FROM (` + source(years+" OR (o.date >= DATE '2026-05-02' AND o.region = 'asia')") + `) s ORDER BY order_id`
	pgtestSame(t, e, target, e.rows(renamed))
	if n := e.count(`SELECT count(*) FROM orders_enriched WHERE product_name = 'green tea'`); n == 0 {
		t.Fatal("no asia row of the last 30 days was recomputed: the data does not test the override")
	}
}

func pgtestSame(t *testing.T, e *env, q string, want []string) {
	t.Helper()
	got := e.rows(q)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d rows, want %d:\n%s\nwant:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func backfillFile(t *testing.T, p *spec.Project, name string) *spec.Backfill {
	t.Helper()
	for _, b := range p.Backfills {
		if strings.HasSuffix(b.File, "/"+name) {
			return b
		}
	}
	t.Fatalf("no backfill file %s", name)
	return nil
}

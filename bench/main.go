// Command bench compares a rwc refresh of a 7-day window with what a user
// would otherwise run: the same DELETE+INSERT written by hand in one psql
// transaction, and REFRESH MATERIALIZED VIEW of the same query. It starts
// its own PostgreSQL, generates the data, and prints the ratios of one run.
//
//	go run ./bench [-rows 3000000] [-rounds 5]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	_ "github.com/lib/pq"

	"github.com/rwc-dev/rwc/run/pgcluster"
)

const spec = `pipeline: bench
tables:
  sales_enriched:
    replace_where: date >= date_add(current_date(), -7)
    columns:
      sale_id: bigint
      date: date
      store_name: text
      region: text
      amount: numeric(12,2)
    query: |
      SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
      FROM sales_fct f
      JOIN store_dim d ON f.store_id = d.store_id  -- rwc:nolint RW403 dimension
`

const handWritten = `BEGIN;
DELETE FROM hand_enriched WHERE date >= current_date - 7;
INSERT INTO hand_enriched
SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id
WHERE f.date >= current_date - 7;
COMMIT;`

func main() {
	rows := flag.Int("rows", 3_000_000, "fact rows, spread over 365 days")
	rounds := flag.Int("rounds", 5, "timed rounds of each contender (the median is reported)")
	rwcBin := flag.String("rwc", "bin/rwc", "the rwc binary to measure")
	flag.Parse()
	if err := bench(*rows, *rounds, *rwcBin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func bench(rows, rounds int, rwcBin string) error {
	ctx := context.Background()
	rwcBin, err := filepath.Abs(rwcBin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "rwc-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, "pgdata"), Fsync: true})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer c.Stop()
	if err := c.CreateDatabase(ctx, "bench"); err != nil {
		return err
	}
	dsn := c.DSN("bench")
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	fmt.Printf("generating %d fact rows over 365 days…\n", rows)
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`
		CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text, region text);
		INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['emea','amer','apac'])[1 + i %% 3] FROM generate_series(1, 1000) i;
		CREATE TABLE sales_fct (sale_id bigint PRIMARY KEY, date date NOT NULL, store_id int NOT NULL, amount numeric(12,2));
		INSERT INTO sales_fct SELECT i, current_date - (i %% 365), 1 + (i * 7) %% 1000, (i %% 10000) / 100.0 FROM generate_series(1, %d) i;
		CREATE INDEX ON sales_fct (date);
		CREATE TABLE hand_enriched (sale_id bigint, date date, store_name text, region text, amount numeric(12,2));
		INSERT INTO hand_enriched SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
			FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id;
		CREATE INDEX ON hand_enriched (date);
		CREATE MATERIALIZED VIEW mv_enriched AS SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
			FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id`, rows)); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return err
	}
	specDir := filepath.Join(tmp, "pipelines")
	if err := os.MkdirAll(specDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(specDir, "bench.yaml"), []byte(spec), 0o644); err != nil {
		return err
	}
	rwc := func() error {
		cmd := exec.Command(rwcBin, "--dsn", dsn, "apply", specDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("rwc apply: %v\n%s", err, out)
		}
		return nil
	}
	// The first apply creates the target and fills its window; the target
	// then holds the same history as hand_enriched.
	if err := rwc(); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO public.sales_enriched SELECT * FROM hand_enriched WHERE date < current_date - 7;
		CREATE INDEX ON public.sales_enriched (date)`); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE public.sales_enriched`); err != nil {
		return err
	}
	psql := func(script string) error {
		cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn, "-c", script)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("psql: %v\n%s", err, out)
		}
		return nil
	}
	contenders := []struct {
		name string
		run  func() error
	}{
		{"rwc apply (7-day window)", rwc},
		{"hand-written DELETE+INSERT in psql", func() error { return psql(handWritten) }},
		{"REFRESH MATERIALIZED VIEW", func() error { return psql("REFRESH MATERIALIZED VIEW mv_enriched") }},
	}
	times := make([][]time.Duration, len(contenders))
	for r := 0; r < rounds; r++ {
		for i, c := range contenders {
			start := time.Now()
			if err := c.run(); err != nil {
				return err
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	med := make([]time.Duration, len(contenders))
	for i := range contenders {
		med[i] = median(times[i])
	}
	fmt.Printf("\n%d fact rows, 1000-row dimension, 7-day window (~%d rows), median of %d rounds, one run:\n\n", rows, rows*8/365, rounds)
	fmt.Println("| contender | median | rwc ÷ this |")
	fmt.Println("| --- | ---: | ---: |")
	for i, c := range contenders {
		fmt.Printf("| %s | %s | %.2f× |\n", c.name, med[i].Round(time.Millisecond), float64(med[0])/float64(med[i]))
	}
	fmt.Printf("\ngoals: rwc ≤ 1.10× hand-written, ≤ 0.10× REFRESH MATERIALIZED VIEW\n")
	return nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

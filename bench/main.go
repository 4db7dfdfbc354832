// Command bench compares a rwc refresh of a 7-day window with what a user
// would otherwise run: the same DELETE+INSERT written by hand in one psql
// transaction, and REFRESH MATERIALIZED VIEW of the same query. It starts
// its own PostgreSQL, generates the data, and prints the ratios of one run.
//
// Then, on the same data and in the same run: an incremental refresh after
// one late-arriving day against a whole-window recompute of the same flow
// (-incremental), and the last of a run of whole-window recomputes against
// the first, which VACUUM after each refresh is meant to keep within 1.2×
// (-repeat).
//
// -expectations compares the 7-day window's refresh of a flow with five
// typical expectations (expect:) with the same refresh without them,
// alternating round by round.
//
// -baseline BIN also compares the rwc binary with BIN (an earlier commit's
// build), alternating them round by round on the same data.
//
// -readers N measures only what readers of a target go through during
// rwc refresh --full and during a refresh that adds a column, N rounds each
// (with -baseline, for both binaries, alternating): see benchReaders.
//
// -capture 1000000,4000000,16000000 measures only a refresh with nothing
// changed, capturing by fingerprints and by triggers, and the triggers'
// cost on inserts: see benchCapture.
//
// -history 1000000,8000000,32000000 measures only a 7-day window's refresh
// on targets holding that much history, plain and partitioned, then the
// partitioned target's repeated and incremental refreshes and a reader's
// waits during its swaps: see benchHistory.
//
// -fixed N measures only the fixed cost of rwc apply (issue #17): N rounds
// of the whole process of an apply of one flow whose sources did not
// change, from a git repository, with -baseline for both binaries,
// alternating: see benchFixed.
//
// -layout says how the fact table's rows lie on disk: "clustered" (by date,
// as a table loaded day after day is) or "scattered" (every page holds
// every day: each day's rows are read from all of the table's pages).
//
//	go run ./bench [-rows 3000000] [-rounds 5] [-layout clustered] [-incremental=true] [-repeat 100] [-baseline OLD_RWC] [-readers 0] [-fixed 0]
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
	"strings"
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
	layout := flag.String("layout", "clustered", `fact rows on disk: "clustered" by date (loaded day by day) or "scattered" (each page holds every day)`)
	incremental := flag.Bool("incremental", true, "also compare an incremental refresh after one late-arriving day with a whole-window recompute")
	expectations := flag.Bool("expectations", true, "also compare the 7-day window's refresh with five typical expectations against the same refresh without them")
	repeat := flag.Int("repeat", 100, "also run this many whole-window recomputes in a row and compare the last with the first (0: skip)")
	baseline := flag.String("baseline", "", "another rwc binary (an earlier commit's) to compare -rwc with, round by round on the same data")
	readerRounds := flag.Int("readers", 0, "measure only what readers of a target go through during a full refresh and a column add, this many rounds each (0: the other measurements)")
	history := flag.String("history", "", `measure only a 7-day window's refresh on a plain and a partitioned target holding these many rows of history, e.g. "1000000,8000000,32000000", then the partitioned target's repeated, incremental and concurrent-reader figures`)
	capture := flag.String("capture", "", `measure only a refresh with nothing changed, capturing by fingerprints and by triggers, and what the triggers cost the fact's writers, at these many fact rows, e.g. "1000000,4000000,16000000"`)
	citus := flag.String("citus", "", `measure only a 7-day window on a Citus cluster started here for each of these many fact rows, e.g. "1000000,4000000,16000000" (a coordinator and two workers), the fact distributed, into a co-located distributed target: the whole window against the hand-written SQL, a late day, nothing changed (says so and skips without the citus extension)`)
	fixed := flag.Int("fixed", 0, "measure only the fixed cost of rwc apply: this many rounds of the whole process of an apply whose sources did not change (with -baseline, for both binaries, alternating)")
	flag.Parse()
	fixedRounds = *fixed
	historyLevels, captureSizes, citusSizes = rowCounts("history", *history), rowCounts("capture", *capture), rowCounts("citus", *citus)
	if _, ok := layouts[*layout]; !ok {
		fmt.Fprintf(os.Stderr, "bench: -layout %q: want clustered or scattered\n", *layout)
		os.Exit(2)
	}
	if err := bench(*rows, *rounds, *rwcBin, *baseline, *layout, *incremental, *repeat, *readerRounds, *expectations); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// historyLevels, captureSizes, citusSizes: -history's, -capture's and
// -citus's row counts (nil: not that measurement).
var historyLevels, captureSizes, citusSizes []int

// rowCounts parses a flag's comma-separated row counts ("": nil).
func rowCounts(name, list string) []int {
	if list == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -%s %q: want a list of row counts\n", name, list)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// fixedRounds: -fixed's rounds (0: not that measurement).
var fixedRounds int

// layouts give the date of fact row i (1..{rows}) as SQL.
var layouts = map[string]string{
	"clustered": "current_date - 364 + ((i - 1)::bigint * 365 / {rows})::int",
	"scattered": "current_date - (i % 365)",
}

func bench(rows, rounds int, rwcBin, baseline, layout string, incremental bool, repeat, readerRounds int, expectations bool) error {
	dateOf := layouts[layout]
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
	if citusSizes != nil {
		return benchCitus(ctx, tmp, rwcBin, citusSizes, rounds)
	}
	c, err := pgcluster.Open(pgcluster.Options{DataDir: filepath.Join(tmp, "pgdata"), Fsync: true, Settings: ivmSettings()})
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
	if historyLevels != nil {
		return benchHistory(ctx, db, dsn, tmp, rwcBin, historyLevels, rounds)
	}
	if captureSizes != nil {
		return benchCapture(ctx, db, dsn, tmp, rwcBin, captureSizes, rounds)
	}

	fmt.Printf("generating %d fact rows over 365 days, %s…\n", rows, layout)
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`
		CREATE TABLE store_dim (store_id int PRIMARY KEY, store_name text, region text);
		INSERT INTO store_dim SELECT i, 'store ' || i, (ARRAY['emea','amer','apac'])[1 + i %% 3] FROM generate_series(1, 1000) i;
		CREATE TABLE sales_fct (sale_id bigint PRIMARY KEY, date date NOT NULL, store_id int NOT NULL, amount numeric(12,2));
		INSERT INTO sales_fct SELECT i, %s, 1 + (i * 7) %% 1000, (i %% 10000) / 100.0 FROM generate_series(1, %d) i;
		CREATE INDEX ON sales_fct (date);
		CREATE TABLE hand_enriched (sale_id bigint, date date, store_name text, region text, amount numeric(12,2));
		INSERT INTO hand_enriched SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
			FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id;
		CREATE INDEX ON hand_enriched (date);
		CREATE MATERIALIZED VIEW mv_enriched AS SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
			FROM sales_fct f JOIN store_dim d ON f.store_id = d.store_id`, strings.ReplaceAll(dateOf, "{rows}", fmt.Sprint(rows)), rows)); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return err
	}
	if fixedRounds > 0 {
		return benchFixed(ctx, db, dsn, tmp, rwcBin, baseline, fixedRounds)
	}
	// targetOf sets up flow (a copy of sales_enriched, as spec says) and
	// returns how bin applies it; target with the bench's spec. Both apply
	// it: the first apply creates the target and fills its window,
	// and the target then holds the same history as hand_enriched.
	var targetOf func(bin, flow, spec string) (func() error, error)
	// target sets up flow (a copy of sales_enriched) and returns how bin
	// applies it: the first apply creates the target and fills its window,
	// and the target then holds the same history as hand_enriched.
	target := func(bin, flow string) (func() error, error) { return targetOf(bin, flow, spec) }
	targetOf = func(bin, flow, spec string) (func() error, error) {
		withOutput, err := applier(tmp, bin, dsn, flow, strings.Replace(spec, "sales_enriched", flow, 1))
		if err != nil {
			return nil, err
		}
		apply := quietly(withOutput)
		if err := apply(); err != nil {
			return nil, err
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO public.%[1]s SELECT * FROM hand_enriched WHERE date < current_date - 7;
			CREATE INDEX ON public.%[1]s (date)`, flow)); err != nil {
			return nil, err
		}
		_, err = db.ExecContext(ctx, "VACUUM ANALYZE public."+flow)
		return apply, err
	}
	if readerRounds > 0 {
		subjects := []*subject{{name: "-rwc", bin: rwcBin, flow: "readers_rwc"}}
		if baseline != "" {
			if baseline, err = filepath.Abs(baseline); err != nil {
				return err
			}
			subjects = append(subjects, &subject{name: "-baseline", bin: baseline, flow: "readers_baseline"})
		}
		return benchReaders(ctx, db, readerRounds, subjects, func(s *subject) error {
			s.dir, s.dsn = filepath.Join(tmp, "pipelines-"+s.flow), dsn
			_, err := target(s.bin, s.flow)
			return err
		})
	}
	rwc, err := target(rwcBin, "sales_enriched")
	if err != nil {
		return err
	}
	psql, err := psqlRunner(dsn)
	if err != nil {
		return err
	}
	// With its sources unchanged, an rwc refresh is incremental and finds
	// nothing to do. Touching the dimension (a source joined on another
	// key), untimed, makes it recompute the whole window, as the other
	// contenders do: like is compared with like.
	touchDim := func() error {
		_, err := db.ExecContext(ctx, `UPDATE store_dim SET region = region WHERE store_id = 1`)
		return err
	}
	contenders := []struct {
		name string
		prep func() error // untimed, before each round
		run  func() error
	}{
		{"rwc apply (7-day window)", touchDim, rwc},
		{"hand-written DELETE+INSERT in psql", nil, func() error { return psql(handWritten) }},
		{"REFRESH MATERIALIZED VIEW", nil, func() error { return psql("REFRESH MATERIALIZED VIEW mv_enriched") }},
	}
	times := make([][]time.Duration, len(contenders))
	actions := map[string]int{}
	for r := 0; r < rounds; r++ {
		for i, c := range contenders {
			if c.prep != nil {
				if err := c.prep(); err != nil {
					return err
				}
			}
			start := time.Now()
			if err := c.run(); err != nil {
				return err
			}
			times[i] = append(times[i], time.Since(start))
			if i == 0 {
				ev, err := lastEvent(ctx, db, "sales_enriched")
				if err != nil {
					return err
				}
				actions[ev.what()]++
			}
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
	fmt.Printf("rwc's refreshes: %s\n", counts(actions))

	if baseline != "" {
		if baseline, err = filepath.Abs(baseline); err != nil {
			return err
		}
		base, err := target(baseline, "sales_baseline")
		if err != nil {
			return err
		}
		if err := benchBaseline(ctx, db, rows, rounds, rwc, base, touchDim); err != nil {
			return err
		}
	}
	if incremental {
		if err := benchIncremental(ctx, db, rows, rounds, rwc, touchDim); err != nil {
			return err
		}
	}
	if expectations {
		expected, err := targetOf(rwcBin, "sales_expected", expectedSpec)
		if err != nil {
			return err
		}
		if err := benchExpectations(ctx, db, rounds, rwc, expected, touchDim); err != nil {
			return err
		}
	}
	if repeat > 0 {
		if err := benchRepeat(ctx, db, repeat, rwc, touchDim); err != nil {
			return err
		}
	}
	return benchPlan(rwcBin, rounds)
}

// benchIncremental compares, round by round in one run, three refreshes of
// the same flow: after one late-arriving day inside the window (rwc
// recomputes that day), after a late day and a touch of the dimension
// (rwc falls back to recomputing the whole window), and with nothing
// changed (rwc only fingerprints).
func benchIncremental(ctx context.Context, db *sql.DB, rows, rounds int, rwc, touchDim func() error) error {
	perDay, lateDay := rows/365, lateDays(ctx, db, rows)
	kinds := []struct {
		name string
		prep func() error
	}{
		{"incremental, one late-arriving day", lateDay},
		{"whole window (late day + dimension touched)", func() error {
			if err := lateDay(); err != nil {
				return err
			}
			return touchDim()
		}},
		{"incremental, nothing changed", nil},
	}
	wall := make([][]time.Duration, len(kinds))
	inTx := make([][]time.Duration, len(kinds))
	actions := make([]map[string]int, len(kinds))
	for r := 0; r < rounds; r++ {
		for i, k := range kinds {
			if k.prep != nil {
				if err := k.prep(); err != nil {
					return err
				}
			}
			start := time.Now()
			if err := rwc(); err != nil {
				return err
			}
			wall[i] = append(wall[i], time.Since(start))
			ev, err := lastEvent(ctx, db, "sales_enriched")
			if err != nil {
				return err
			}
			inTx[i] = append(inTx[i], ev.duration)
			if actions[i] == nil {
				actions[i] = map[string]int{}
			}
			actions[i][ev.what()]++
		}
	}
	fmt.Printf("\nincremental refresh: %d rows arrive late for one day (of ~%d rows) in the 7-day window, another day each round, median of %d rounds, one run\n", perDay/10, perDay, rounds)
	fmt.Printf("(rwc apply: the whole process; refresh: the refresh transaction as the event log records it, without commit and VACUUM):\n\n")
	fmt.Println("| refresh | rwc apply | ÷ whole window | refresh | ÷ whole window | what rwc did |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | --- |")
	w, t := median(wall[1]), median(inTx[1])
	for i, k := range kinds {
		fmt.Printf("| %s | %s | %.2f× | %s | %.2f× | %s |\n", k.name, median(wall[i]).Round(time.Millisecond), float64(median(wall[i]))/float64(w),
			median(inTx[i]).Round(time.Millisecond), float64(median(inTx[i]))/float64(t), counts(actions[i]))
	}
	return nil
}

// lateDays returns a function that inserts a tenth of a day's rows, late,
// for one day of the window, another day each time (days 1..6 back), so
// that every recompute of a day rewrites about a day's rows, not a day
// that grows round by round.
func lateDays(ctx context.Context, db *sql.DB, rows int) func() error {
	late := 0
	return func() error {
		late++
		_, err := db.ExecContext(ctx, `INSERT INTO sales_fct
			SELECT m + i, current_date - $2::int, 1 + (i * 7) % 1000, (i % 10000) / 100.0
			FROM (SELECT max(sale_id) AS m FROM sales_fct) x, generate_series(1, $1) i`, rows/365/10, 1+late%6)
		return err
	}
}

// benchBaseline compares the rwc binary with another one (an earlier
// commit's) on the same data, alternating them round by round so that
// both see the same machine: a whole-window recompute and an incremental
// refresh of one late day, each as the whole process and as the refresh
// transaction. Each binary refreshes a flow of its own (sales_enriched,
// sales_baseline) over the same sources, so that neither pays for the
// other's dead rows (VACUUM comes every few refreshes of a flow), and
// each change to the sources is made once for both.
func benchBaseline(ctx context.Context, db *sql.DB, rows, rounds int, rwc, base func() error, touchDim func() error) error {
	lateDay := lateDays(ctx, db, rows)
	kinds := []struct {
		name string
		prep func() error
	}{
		{"whole window (dimension touched)", touchDim},
		{"incremental, one late-arriving day", lateDay},
	}
	fmt.Printf("\n-rwc against -baseline, alternating, median of %d rounds, one run:\n\n", rounds)
	fmt.Println("| refresh | rwc apply: -rwc | -baseline | ratio | refresh: -rwc | -baseline | ratio |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, k := range kinds {
		var wall, inTx [2][]time.Duration
		for r := 0; r < rounds; r++ {
			if err := k.prep(); err != nil {
				return err
			}
			for i := range 2 {
				which := (r + i) % 2 // who goes first alternates
				start := time.Now()
				if err := []func() error{rwc, base}[which](); err != nil {
					return err
				}
				wall[which] = append(wall[which], time.Since(start))
				ev, err := lastEvent(ctx, db, []string{"sales_enriched", "sales_baseline"}[which])
				if err != nil {
					return err
				}
				inTx[which] = append(inTx[which], ev.duration)
			}
		}
		w0, w1, t0, t1 := median(wall[0]), median(wall[1]), median(inTx[0]), median(inTx[1])
		fmt.Printf("| %s | %s | %s | %.2f× | %s | %s | %.2f× |\n", k.name, w0.Round(time.Millisecond), w1.Round(time.Millisecond),
			float64(w0)/float64(w1), t0.Round(time.Millisecond), t1.Round(time.Millisecond), float64(t0)/float64(t1))
	}
	return nil
}

// benchRepeat runs n whole-window recomputes in a row (each deletes and
// re-inserts the window's rows, leaving as many dead row versions) and
// compares the last with the first.
func benchRepeat(ctx context.Context, db *sql.DB, n int, rwc, touchDim func() error) error {
	type stat struct{ dead, pages int64 }
	// Dead row versions counted by pgstattuple, which reads the pages:
	// pg_stat_user_tables.n_dead_tup also counts rows that the refresh
	// deleted and its VACUUM removed, when the refresh's connection reports
	// its deletes after the VACUUM reported. Without the extension: -1.
	_, noPgstattuple := db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`)
	stats := func() (stat, error) {
		s := stat{dead: -1}
		if noPgstattuple == nil {
			if err := db.QueryRowContext(ctx, `SELECT dead_tuple_count FROM pgstattuple('public.sales_enriched')`).Scan(&s.dead); err != nil {
				return s, err
			}
		}
		err := db.QueryRowContext(ctx, `SELECT pg_relation_size('public.sales_enriched') / current_setting('block_size')::bigint`).Scan(&s.pages)
		return s, err
	}
	before, err := stats()
	if err != nil {
		return err
	}
	var wall, inTx []time.Duration
	actions := map[string]int{}
	for i := 0; i < n; i++ {
		if err := touchDim(); err != nil {
			return err
		}
		start := time.Now()
		if err := rwc(); err != nil {
			return err
		}
		wall = append(wall, time.Since(start))
		ev, err := lastEvent(ctx, db, "sales_enriched")
		if err != nil {
			return err
		}
		inTx = append(inTx, ev.duration)
		actions[ev.what()]++
	}
	after, err := stats()
	if err != nil {
		return err
	}
	k := min(5, n)
	fmt.Printf("\n%d whole-window recomputes in a row (%s), the last against the first:\n\n", n, counts(actions))
	fmt.Println("| | first | last | last ÷ first | median of last 5 ÷ median of first 5 |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	fmt.Printf("| rwc apply | %s | %s | %.2f× | %.2f× |\n", wall[0].Round(time.Millisecond), wall[n-1].Round(time.Millisecond),
		float64(wall[n-1])/float64(wall[0]), float64(median(wall[n-k:]))/float64(median(wall[:k])))
	fmt.Printf("| refresh transaction | %s | %s | %.2f× | %.2f× |\n", inTx[0].Round(time.Millisecond), inTx[n-1].Round(time.Millisecond),
		float64(inTx[n-1])/float64(inTx[0]), float64(median(inTx[n-k:]))/float64(median(inTx[:k])))
	fmt.Printf("\ntarget: %d pages and %d dead row versions before, %d pages and %d after\n", before.pages, before.dead, after.pages, after.dead)
	fmt.Printf("goal: the last refresh ≤ 1.2× the first\n")
	return nil
}

// event is a refresh's line in rwc's event log.
// psqlRunner returns how the hand-written contenders run a script: the
// server's own psql, not Debian's /usr/bin/psql, a Perl wrapper that takes
// three times as long to start: that would be the hand-written
// contender's handicap, not rwc's merit.
func psqlRunner(dsn string) (func(script string) error, error) {
	bin, err := pgcluster.BinDir()
	if err != nil {
		return nil, err
	}
	psqlBin := filepath.Join(bin, "psql")
	return func(script string) error {
		cmd := exec.Command(psqlBin, "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn, "-c", script)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("psql: %v\n%s", err, out)
		}
		return nil
	}, nil
}

type event struct {
	action, reasons string
	partitions      int
	duration        time.Duration
	unprobed        bool // capture: triggers vouched that nothing changed
}

func (e event) what() string {
	s := e.action
	if e.reasons != "" {
		s += " " + e.reasons
	}
	if e.action == "incremental" {
		plural := "s"
		if e.partitions == 1 {
			plural = ""
		}
		s += fmt.Sprintf(" (%d partition%s)", e.partitions, plural)
	}
	if e.unprobed {
		s += ", unprobed"
	}
	return s
}

func lastEvent(ctx context.Context, db *sql.DB, flow string) (event, error) {
	var e event
	var ms int64
	err := db.QueryRowContext(ctx, `SELECT action, array_to_string(reasons, ','), duration_ms,
			coalesce(jsonb_array_length(nullif(details->'partitions', 'null')), 0), coalesce(details->>'capture' LIKE '%no probe%', false)
		FROM rwc.events WHERE flow = $1 AND kind = 'planning_information' ORDER BY id DESC LIMIT 1`, flow).
		Scan(&e.action, &e.reasons, &ms, &e.partitions, &e.unprobed)
	e.duration = time.Duration(ms) * time.Millisecond
	return e, err
}

// counts renders how often each thing happened: "incremental ×5".
func counts(m map[string]int) string {
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

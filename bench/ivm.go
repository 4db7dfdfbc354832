package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
)

// ivmSkipped says why ivmInserts measured nothing.
const ivmSkipped = "pg_ivm is not installed on this server: its comparison is skipped (build it from sraoss/pg_ivm, make USE_PGXS=1 install)"

// ivmSettings preloads pg_ivm on the bench's server when its library is
// installed there: pg_ivm's README asks for it, because its transaction
// callbacks and the hook that forgets a dropped IMMV exist only in
// sessions that loaded the library. Preloaded, no rwc connection pays
// for loading it.
func ivmSettings() []string {
	bin, err := pgcluster.BinDir()
	if err != nil {
		return nil
	}
	out, err := exec.Command(filepath.Join(bin, "pg_config"), "--pkglibdir").Output()
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "pg_ivm.so")); err != nil {
		return nil
	}
	return []string{"shared_preload_libraries = 'pg_ivm'"}
}

// ivmInserts times batches 1,000-row inserts of late rows (for yesterday,
// the same statement as insertCost's) into a copy of fact that an
// incrementally maintained view (pg_ivm's IMMV) of the bench flow's query
// keeps up to date in each insert's transaction; it then checks the view
// against its query and drops both. Without pg_ivm on the server it
// measures nothing and says so in note.
func ivmInserts(ctx context.Context, db *sql.DB, fact string, batches int) (durations []time.Duration, note string, err error) {
	var available bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_ivm')`).Scan(&available); err != nil || !available {
		return nil, ivmSkipped, err
	}
	table, immv := fact+"_ivm", fact+"_immv"
	// An IMMV refuses current_date (not immutable): the window's start is
	// the literal date the spec's date_add(current_date(), -7) is today.
	var from string
	if err := db.QueryRowContext(ctx, `SELECT (current_date - 7)::text`).Scan(&from); err != nil {
		return nil, "", err
	}
	query := fmt.Sprintf(`SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
		FROM %s f JOIN store_dim d ON f.store_id = d.store_id WHERE f.date >= DATE '%s'`, table, from)
	// The IMMV gets the index on date that the bench's targets have.
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE EXTENSION IF NOT EXISTS pg_ivm;
		CREATE TABLE %[1]s (LIKE %[2]s INCLUDING ALL);
		INSERT INTO %[1]s SELECT * FROM %[2]s;
		SELECT pgivm.create_immv('%[3]s', $q$%[4]s$q$);
		CREATE INDEX ON %[3]s (date)`, table, fact, immv, query)); err != nil {
		return nil, "", err
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+table+", "+immv); err != nil {
		return nil, "", err
	}
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT max(sale_id) + 1 FROM "+table).Scan(&next); err != nil {
		return nil, "", err
	}
	for range batches {
		start := time.Now()
		if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` SELECT $1 + i, current_date - 1, 1 + (i * 7) % 1000, 1.5 FROM generate_series(1, 1000) i`, next); err != nil {
			return nil, "", err
		}
		durations = append(durations, time.Since(start))
		next += 1000
	}
	cols := "sale_id, date, store_name, region, amount"
	var differ int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM ((SELECT %[1]s FROM %[2]s EXCEPT ALL %[3]s)
		UNION ALL (%[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s)) x`, cols, immv, query)).Scan(&differ); err != nil {
		return nil, "", err
	}
	if differ != 0 {
		return nil, "", fmt.Errorf("pg_ivm: after %d batches, %s differs from its query by %d rows", batches, immv, differ)
	}
	// Dropped, the IMMV's triggers leave store_dim, which later sizes share.
	_, err = db.ExecContext(ctx, "DROP TABLE "+immv+", "+table)
	return durations, "", err
}

// immediateInserts times the pg_ivm workload's inserts against a flow with
// maintain: immediate, whose triggers keep its target up to date inside
// each insert, on a copy of fact (so that the other contenders' sources
// carry no maintenance): the flow applied once, untimed, then batches
// 1,000-row inserts of late rows; it then checks the target's window
// against the query and drops the flow's triggers and the copy.
func immediateInserts(ctx context.Context, db *sql.DB, dsn, tmp, rwcBin, fact string, batches int) ([]time.Duration, error) {
	table, flow := fact+"_imm", "immediate_"+fact
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %[1]s (LIKE %[2]s INCLUDING ALL);
		INSERT INTO %[1]s SELECT * FROM %[2]s`, table, fact)); err != nil {
		return nil, err
	}
	s := strings.NewReplacer("sales_enriched", flow, "FROM sales_fct f", "FROM "+table+" f",
		"    query: |", "    maintain: immediate\n    query: |").Replace(spec)
	apply, err := applier(tmp, rwcBin, dsn, flow, s)
	if err != nil {
		return nil, err
	}
	if _, err := apply(); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+table+", "+flow); err != nil {
		return nil, err
	}
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT max(sale_id) + 1 FROM "+table).Scan(&next); err != nil {
		return nil, err
	}
	var durations []time.Duration
	for range batches {
		start := time.Now()
		if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` SELECT $1 + i, current_date - 1, 1 + (i * 7) % 1000, 1.5 FROM generate_series(1, 1000) i`, next); err != nil {
			return nil, err
		}
		durations = append(durations, time.Since(start))
		next += 1000
	}
	query := fmt.Sprintf(`SELECT f.sale_id, f.date, d.store_name, d.region, f.amount
		FROM %s f JOIN store_dim d ON f.store_id = d.store_id WHERE f.date >= current_date - 7`, table)
	cols := "sale_id, date, store_name, region, amount"
	var differ int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM ((SELECT %[1]s FROM %[2]s WHERE date >= current_date - 7 EXCEPT ALL %[3]s)
		UNION ALL (%[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s WHERE date >= current_date - 7)) x`, cols, flow, query)).Scan(&differ); err != nil {
		return nil, err
	}
	if differ != 0 {
		return nil, fmt.Errorf("maintain: immediate: after %d batches, %s differs from its query by %d rows", batches, flow, differ)
	}
	// Its trigger on store_dim would recompute its window whenever a later
	// round touches the dimension.
	_, err = db.ExecContext(ctx, `DO $$DECLARE f regprocedure; BEGIN
		FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE pronamespace = 'rwc'::regnamespace AND proname LIKE 'maintain\_%' LOOP
			EXECUTE 'DROP FUNCTION ' || f || ' CASCADE';
		END LOOP; END$$;
		DROP TABLE `+table)
	return durations, err
}

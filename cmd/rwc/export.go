package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
)

func newExportCmd(g *globals) *cobra.Command {
	var to, out string
	cmd := &cobra.Command{
		Use:   "export --to databricks [DIR]",
		Short: "Write the specs as Databricks pipeline SQL and the backfill files as replace_where_overrides",
		Long: `Write each pipeline of DIR (default ./pipelines) as Lakeflow pipeline SQL,
OUT/<pipeline>.sql: per flow, CREATE OR REFRESH STREAMING TABLE with its
columns (PostgreSQL → Spark types), primary key, PARTITIONED BY for
partitioning by day, TBLPROPERTIES ('pipelines.reset.allowed' = 'false') for
reset_allowed: false, and FLOW REPLACE WHERE <the predicate in Spark SQL> BY
NAME <the query>. Each backfill file becomes OUT/backfills/<name>.json, the
body of a pipeline update (POST /api/2.0/pipelines/{id}/updates) with its
replace_where_overrides and refresh_selection. OUT is --out, default
./databricks; its files are replaced.

What does not carry (indexes, partition_by, batches, types Spark lacks,
PostgreSQL-only query syntax) is listed as warnings at its position in the
specs, and as comments above the statement. The specs must lint clean. With a database named (--dsn, RWC_DATABASE_URL or
PG*), only pending backfill files are exported: those its ledger shows applied
are left out; without one, every backfill file is.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to != "databricks" {
				return fmt.Errorf("--to %q: rwc exports to databricks", to)
			}
			dir := specDir(args)
			p, err := loadClean(cmd, dir)
			if err != nil {
				return err
			}
			pending, applied, err := pendingBackfills(cmd.Context(), g, p, dir)
			if err != nil {
				return err
			}
			res, err := databricks.Export(pending)
			if err != nil {
				return err
			}
			diag.WriteText(cmd.ErrOrStderr(), res.NotCarried, sourcesOf(p))
			for _, f := range res.Files {
				if err := writableInside("rwc export", out, filepath.FromSlash(f.Path)); err != nil {
					return err
				}
			}
			if err := writeFiles(cmd.OutOrStdout(), out, res.Files); err != nil {
				return err
			}
			if applied > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "left out %s the database's ledger shows applied\n", diag.Plural(applied, "backfill file"))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s to %s (%s not carried)\n", diag.Plural(len(res.Files), "file"), out, diag.Plural(len(res.NotCarried), "thing"))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the target: databricks (required)")
	cmd.Flags().StringVar(&out, "out", "databricks", "directory to write into")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// pendingBackfills is the project's specs with only the backfill files that
// still run, by the named database's ledger (all of them when no database is
// named or it has no rwc state), and how many were left out.
func pendingBackfills(ctx context.Context, g *globals, p *compile.Project, dir string) (*spec.Project, int, error) {
	if g.namedDSN() == "" || len(p.Backfills) == 0 {
		return p.Spec, 0, nil
	}
	db, err := g.connectOnly(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	var hasState bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass('rwc.backfills') IS NOT NULL").Scan(&hasState); err != nil || !hasState {
		return p.Spec, 0, err
	}
	jobs := run.BackfillJobs(p, dir, "")
	files := make([]run.BackfillFile, len(jobs))
	for i, j := range jobs {
		files[i] = run.BackfillFile{Key: j.Path, Hash: j.Hash(), Flow: j.Flow.Name()}
	}
	ids, err := run.IdentifyBackfills(ctx, db, files)
	if err != nil {
		return nil, 0, err
	}
	only := *p.Spec
	only.Backfills = nil
	for i, b := range p.Backfills {
		if ids[i].Status.Runs() {
			only.Backfills = append(only.Backfills, b.File)
		}
	}
	return &only, len(p.Backfills) - len(only.Backfills), nil
}

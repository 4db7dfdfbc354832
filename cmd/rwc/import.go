package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/diff"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
)

func newImportCmd(g *globals) *cobra.Command {
	var out, pipeline, schema, at, timezone string
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Turn Databricks pipeline SQL (REPLACE WHERE flows) and replace_where_overrides into specs and backfill files",
		Long: `Read Databricks pipeline SQL (FILE.sql: CREATE [OR REFRESH] STREAMING TABLE …
FLOW REPLACE WHERE pred BY NAME SELECT …, or CREATE STREAMING TABLE t; with
CREATE FLOW f AS INSERT INTO t BY NAME REPLACE WHERE pred SELECT …;
REFRESH STREAMING TABLE t WHERE pred) and replace_where_overrides (FILE.json:
a list of {flow_name, predicate_override}, or a pipeline update's request
body), and write specs (DIR/<pipeline>.yaml, in rwc fmt's format) and backfill
files (DIR/backfills/<date>-<flow>.yaml). DIR is --out, default ./pipelines.

Predicates are translated from Spark SQL to CEL, queries from Spark SQL to
PostgreSQL where the two differ in the common cases (docs/databricks.md has
the tables); what has no equivalent is an error at its FILE:line:col, what is
not carried a warning. A table without a column list is typed from the
database (--dsn, RWC_DATABASE_URL or PG*: read-only, the sources must exist);
without one named, its columns must be declared. An override that reads the
clock is resolved at --at (default now), since a backfill file runs once.

Nothing is written when there is an error, nor over an existing spec file.
Exit status: 0 written, 1 errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			zone, err := time.LoadLocation(timezone)
			if err != nil {
				return fmt.Errorf("--timezone %q: %v", timezone, err)
			}
			when, err := parseAt(at, zone)
			if err != nil {
				return err
			}
			if pipeline != "" && !databricks.ValidName(pipeline) {
				return fmt.Errorf("--pipeline %q is not a pipeline name: a letter or _, then lower-case letters, digits or _, at most 63 bytes", pipeline)
			}
			dir := out
			if dir == "" {
				dir = defaultSpecDir
			}
			opt := databricks.Options{Pipeline: pipeline, Schema: schema, At: when, Zone: zone, Flows: existingFlows(dir)}
			inputs, err := readInputs(args)
			if err != nil {
				return err
			}
			if dsn := g.namedDSN(); dsn != "" {
				db, err := g.connectOnly(cmd.Context())
				if err != nil {
					return err
				}
				defer db.Close()
				opt.Describe = func(q string) ([]databricks.Column, error) {
					ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
					defer cancel()
					return run.DescribeQuery(ctx, db, q)
				}
			}
			res := databricks.Import(inputs, opt)
			diag.WriteText(cmd.ErrOrStderr(), res.Diagnostics, inputLines(inputs))
			if res.Diagnostics.HasErrors() {
				return fmt.Errorf("import has errors (%s); nothing was written", res.Diagnostics.Summary())
			}
			return writeImported(cmd, dir, res.Files)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "spec directory to write into (default ./pipelines)")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "put every flow into the pipeline `NAME` (default: one pipeline per SQL file, named after it)")
	cmd.Flags().StringVar(&schema, "schema", "", "target schema (default: the tables' own, else public)")
	cmd.Flags().StringVar(&at, "at", "", "resolve current_date() in overrides at `TIME` (2026-12-01 or RFC 3339) instead of now")
	cmd.Flags().StringVar(&timezone, "timezone", envOr("RWC_TIMEZONE", "UTC"), "time zone in which current_date() is read")
	return cmd
}

func readInputs(args []string) ([]databricks.Input, error) {
	var inputs []databricks.Input
	for _, a := range args {
		b, err := spec.ReadCapped(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", a, err)
		}
		inputs = append(inputs, databricks.Input{Name: a, Src: b})
	}
	return inputs, nil
}

func inputLines(inputs []databricks.Input) diag.Sources {
	return func(file string) []string {
		for _, in := range inputs {
			if in.Name == file {
				return strings.Split(strings.ReplaceAll(string(in.Src), "\r\n", "\n"), "\n")
			}
		}
		return nil
	}
}

// existingFlows are the flows already in dir, whose overrides import may
// be asked to turn into backfill files.
func existingFlows(dir string) map[string][]databricks.Column {
	if !isDir(dir) {
		return nil
	}
	p, _ := spec.Load(spec.DirFS(dir, diff.Repo(".")), dir)
	flows := map[string][]databricks.Column{}
	for _, pl := range p.Pipelines {
		for _, t := range pl.Tables {
			var cols []databricks.Column
			for _, c := range t.Columns {
				cols = append(cols, databricks.Column{Name: c.Name, Type: c.Type.Canonical})
			}
			flows[t.Name] = cols
		}
	}
	return flows
}

// writeImported writes the files, refusing to replace a spec; a backfill
// file whose name is taken gets the next free -N.
func writeImported(cmd *cobra.Command, dir string, files []databricks.File) error {
	var taken []string
	for i, f := range files {
		if err := writableInside("rwc import", dir, filepath.FromSlash(f.Path)); err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if !strings.HasPrefix(f.Path, spec.BackfillDir+"/") {
			if fileExists(p) {
				taken = append(taken, p)
			}
			continue
		}
		base := strings.TrimSuffix(p, ".yaml")
		for n := 2; fileExists(p); n++ {
			p = fmt.Sprintf("%s-%d.yaml", base, n)
		}
		files[i].Path, _ = filepath.Rel(dir, p)
		if err := writableInside("rwc import", dir, files[i].Path); err != nil {
			return err
		}
	}
	if len(taken) > 0 {
		return fmt.Errorf("%s already exists: import into another --out, or give --pipeline another name; nothing was written", strings.Join(taken, ", "))
	}
	if err := writeFiles(cmd.OutOrStdout(), dir, files); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "imported %s into %s: review them, run rwc lint %s and commit\n", diag.Plural(len(files), "file"), dir, dir)
	return nil
}

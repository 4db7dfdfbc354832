package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/internal/scaffold"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

func newBackfillCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Backfill files: one-off recomputes committed next to the specs",
	}
	var where, reason, batch string
	newCmd := &cobra.Command{
		Use:   "new [DIR] FLOW --where CEL --reason TEXT",
		Short: "Write a backfill file under DIR/backfills/ after checking its predicate",
		Long: `Write DIR/backfills/<today>-<flow>.yaml, DIR being the spec directory (default
./pipelines), as in rwc backfill new specs page_views --where CEL --reason TEXT.
A single argument is the flow. (--specs DIR, the older spelling, still works;
given with a different DIR it is refused.) The predicate is type-checked
against the flow's columns first and must not depend on when it runs. Commit
the file: the next rwc apply recomputes exactly those rows, once, and records
it in the ledger.`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeFlows(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return fmt.Errorf("--reason is required: say why; it shows in the audit log")
			}
			days := 0
			if cmd.Flags().Changed("batch") {
				var err error
				if days, err = spec.ParseBatch(batch); err != nil {
					return fmt.Errorf("--batch: %v", err)
				}
			}
			specs, names, err := dirAndFlows(cmd, "rwc backfill new", args, 1)
			if err != nil {
				return err
			}
			p, err := loadClean(cmd, specs)
			if err != nil {
				return err
			}
			f := p.Flow(names[0])
			if f == nil {
				return noFlow(names[0], specs, "rwc backfill new [DIR] FLOW", p)
			}
			pr, ds := compileWhere(where, f)
			if ds.HasErrors() {
				diag.WriteText(cmd.ErrOrStderr(), ds, func(string) []string { return []string{where} })
				return fmt.Errorf("--where has errors; no file was written")
			}
			if pr.Determinism != predicate.Immutable {
				return fmt.Errorf("--where must not depend on when it runs (current_date(), current_timestamp(), rand()): write fixed dates, e.g. %s >= date('2026-01-01')", f.PartitionBy)
			}
			doc := map[string]any{"backfill": f.Name(), "where": where, "reason": reason}
			var body strings.Builder
			dir := filepath.Join(specs, spec.BackfillDir)
			// A schema reference only where it resolves (rwc init writes
			// the schemas): one to a file that is not there makes editors
			// complain.
			if ref := scaffold.SchemaRef(dir, "backfill.schema.json"); ref != "" {
				body.WriteString(scaffold.Modeline(ref))
			}
			enc := yaml.NewEncoder(&body)
			enc.SetIndent(2)
			node := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range []string{"backfill", "where", "reason"} {
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(doc[k])})
			}
			if days > 0 {
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "batch"}, &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.Itoa(days) + "d"})
			}
			if err := enc.Encode(node); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			path := filepath.Join(dir, timeNow().UTC().Format("2006-01-02")+"-"+f.Name()+".yaml")
			for i := 2; fileExists(path); i++ {
				path = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.yaml", timeNow().UTC().Format("2006-01-02"), f.Name(), i))
			}
			if err := os.WriteFile(path, []byte(body.String()), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: commit it; the next rwc apply runs it once\n", path)
			return nil
		},
	}
	newCmd.Flags().StringVar(&where, "where", "", "CEL predicate over the flow's columns: the rows to recompute")
	newCmd.Flags().StringVar(&reason, "reason", "", "why (required; shown in the audit log)")
	newCmd.Flags().StringVar(&batch, "batch", "", fmt.Sprintf("run in batches of this many days along the partition column (7d, written to the file as batch: 7d, as rwc refresh --batch takes it; default %dd)", run.DefaultBatchDays))
	addSpecsFlag(newCmd)
	_ = newCmd.MarkFlagRequired("where")
	_ = newCmd.MarkFlagRequired("reason")
	cmd.AddCommand(newCmd)
	return cmd
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rwc-dev/rwc/run"
)

func newLocalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Manage the local PostgreSQL under .rwc/ (the default database)",
		Long: `rwc runs a PostgreSQL of its own under .rwc/ when no --dsn or RWC_DATABASE_URL
is given: initialised and started on first use with the machine's initdb and
pg_ctl (as an unprivileged user when run as root), listening on 127.0.0.1 only.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "start",
		Short: "Initialise (first time) and start the local PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := run.OpenLocal(".", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := l.Start(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), l.URL())
			return nil
		},
	}, &cobra.Command{
		Use:   "stop",
		Short: "Stop the local PostgreSQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !run.LocalExists(".") {
				fmt.Fprintln(cmd.ErrOrStderr(), "rwc: there is no local PostgreSQL under "+run.LocalDir)
				return nil
			}
			l, err := run.OpenLocal(".", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return l.Stop()
		},
	}, &cobra.Command{
		Use:   "url",
		Short: "Print the local PostgreSQL's connection URL (exit 1 when it is not running)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !run.LocalExists(".") {
				return fmt.Errorf("there is no local PostgreSQL under %s: start it with rwc local start", run.LocalDir)
			}
			l, err := run.OpenLocal(".", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if !l.Running() {
				return fmt.Errorf("the local PostgreSQL is not running: start it with rwc local start")
			}
			fmt.Fprintln(cmd.OutOrStdout(), l.URL())
			return nil
		},
	})
	return cmd
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// writeCLIReference renders docs/cli.md from the command definitions, so
// the reference cannot drift from the flags (a test compares them).
func writeCLIReference(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "# Command-line reference\n\n")
	fmt.Fprintf(w, "Generated from rwc's command definitions (`go test ./cmd/rwc -run TestCLIReference -update`).\n\n")
	fmt.Fprintf(w, "%s\n\n", root.Long)
	fmt.Fprintf(w, "Global flags:\n\n")
	writeFlags(w, root.PersistentFlags())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if sub.Runnable() {
				fmt.Fprintf(w, "## `%s`\n\n%s.\n\n", sub.CommandPath(), sub.Short)
				fmt.Fprintf(w, "```\n%s\n```\n\n", sub.UseLine())
				if sub.Long != "" {
					fmt.Fprintf(w, "%s\n\n", sub.Long)
				}
				writeFlags(w, sub.LocalNonPersistentFlags())
			}
			walk(sub)
		}
	}
	walk(root)
}

func writeFlags(w io.Writer, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		if def != "" && def != "false" && def != "0" && def != "[]" {
			def = "`" + def + "`"
		} else {
			def = ""
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", name, strings.ReplaceAll(f.Usage, "|", "\\|"), def))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "| flag | meaning | default |\n| --- | --- | --- |\n%s\n\n", strings.Join(rows, "\n"))
}

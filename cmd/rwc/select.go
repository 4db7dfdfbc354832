package main

import (
	"github.com/spf13/cobra"
)

// selectHelp is --select's help, the same for plan, apply and refresh.
const selectHelp = "only the flows `SELECTOR` selects: FLOW, pipeline:NAME, +FLOW (with every flow upstream), FLOW+ (with every flow downstream); repeat it, or separate selectors with spaces, for their union"

// addSelectFlag adds --select (compile.Select reads the selectors).
func addSelectFlag(cmd *cobra.Command, selectors *[]string) {
	cmd.Flags().StringArrayVarP(selectors, "select", "s", nil, selectHelp)
}

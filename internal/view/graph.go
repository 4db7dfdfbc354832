package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/rwc-dev/rwc/compile"
)

// GraphDOT renders rwc graph as Graphviz DOT: flows as boxes grouped by
// pipeline, source tables as cylinders, an edge from what is read to the
// flow reading it.
func GraphDOT(w io.Writer, g compile.Graph) {
	fmt.Fprintln(w, "digraph rwc {")
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, "  node [shape=box];")
	pipeline := ""
	for _, f := range g.Flows {
		if f.Pipeline != pipeline {
			if pipeline != "" {
				fmt.Fprintln(w, "  }")
			}
			pipeline = f.Pipeline
			fmt.Fprintf(w, "  subgraph %s {\n    label=%s;\n", dotQuote("cluster_"+f.Pipeline), dotQuote("pipeline "+f.Pipeline))
		}
		fmt.Fprintf(w, "    %s [label=%s];\n", dotQuote("flow:"+f.Flow), dotQuote(f.Flow))
	}
	if pipeline != "" {
		fmt.Fprintln(w, "  }")
	}
	for _, s := range g.Sources {
		fmt.Fprintf(w, "  %s [label=%s, shape=cylinder];\n", dotQuote("table:"+s), dotQuote(s))
	}
	for _, e := range g.Edges {
		from := "table:" + e.From
		if e.FromFlow {
			from = "flow:" + e.From
		}
		fmt.Fprintf(w, "  %s -> %s;\n", dotQuote(from), dotQuote("flow:"+e.To))
	}
	fmt.Fprintln(w, "}")
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// GraphMermaid renders rwc graph as a Mermaid flowchart (GitHub draws one
// in a ```mermaid block of a pull request comment): the same nodes and
// edges as GraphDOT.
func GraphMermaid(w io.Writer, g compile.Graph) {
	fmt.Fprintln(w, "flowchart LR")
	ids := map[string]string{}
	pipeline := ""
	for i, f := range g.Flows {
		ids["flow:"+f.Flow] = fmt.Sprintf("f%d", i)
		if f.Pipeline != pipeline {
			if pipeline != "" {
				fmt.Fprintln(w, "  end")
			}
			pipeline = f.Pipeline
			fmt.Fprintf(w, "  subgraph p_%s[%s]\n", f.Pipeline, mermaidLabel("pipeline "+f.Pipeline))
		}
		fmt.Fprintf(w, "    f%d[%s]\n", i, mermaidLabel(f.Flow))
	}
	if pipeline != "" {
		fmt.Fprintln(w, "  end")
	}
	for i, s := range g.Sources {
		ids["table:"+s] = fmt.Sprintf("t%d", i)
		fmt.Fprintf(w, "  t%d[(%s)]\n", i, mermaidLabel(s))
	}
	for _, e := range g.Edges {
		from := ids["table:"+e.From]
		if e.FromFlow {
			from = ids["flow:"+e.From]
		}
		fmt.Fprintf(w, "  %s --> %s\n", from, ids["flow:"+e.To])
	}
}

// mermaidLabel quotes a label; Mermaid has entity codes, not escapes.
func mermaidLabel(s string) string {
	return `"` + strings.NewReplacer(`"`, "#quot;", "\n", " ").Replace(s) + `"`
}

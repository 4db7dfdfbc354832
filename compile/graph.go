package compile

import (
	"sort"
)

// Graph is the dependency graph of flows that rwc graph draws (and writes
// with --format json): each flow, the tables it reads that no flow writes
// (sources), and an edge from what is read to the flow that reads it.
// Everything is sorted, so the output is stable.
type Graph struct {
	Flows   []GraphFlow `json:"flows"`
	Sources []string    `json:"sources"`
	Edges   []GraphEdge `json:"edges"`
}

// GraphFlow is one flow of a Graph.
type GraphFlow struct {
	Flow     string `json:"flow"`
	Pipeline string `json:"pipeline"`
	Target   string `json:"target"`
}

// GraphEdge says that To (a flow) reads From: a flow's target when
// FromFlow, else a source table (as Graph.Sources names it).
type GraphEdge struct {
	From     string `json:"from"`
	FromFlow bool   `json:"from_flow"`
	To       string `json:"to"`
}

// BuildGraph is p's graph, narrowed to the selection's flows (nil: all)
// and what they read (the target of a flow left out is drawn as a table).
func BuildGraph(p *Project, sel *Selection) Graph {
	g := Graph{Flows: []GraphFlow{}, Sources: []string{}, Edges: []GraphEdge{}}
	targets := map[string]*Flow{}
	for _, f := range p.Flows {
		targets[f.Table.QualifiedName()] = f
	}
	sources := map[string]bool{}
	edges := map[GraphEdge]bool{}
	for _, f := range p.Flows {
		if !sel.Has(f.Name()) {
			continue
		}
		g.Flows = append(g.Flows, GraphFlow{Flow: f.Name(), Pipeline: f.Table.Pipeline.Name, Target: f.Target()})
		if f.Query == nil {
			continue
		}
		for _, ref := range f.Query.Tables {
			schema := ref.Schema
			if schema == "" {
				schema = "public" // as order() resolves it
			}
			name := ref.Name
			if ref.Schema != "" {
				name = ref.Schema + "." + ref.Name
			}
			if dep := targets[schema+"."+ref.Name]; dep != nil {
				if sel.Has(dep.Name()) {
					edges[GraphEdge{From: dep.Name(), FromFlow: true, To: f.Name()}] = true
					continue
				}
				// A flow left out of the selection: drawn as the table read.
				name = dep.Table.QualifiedName()
			}
			sources[name] = true
			edges[GraphEdge{From: name, To: f.Name()}] = true
		}
	}
	sort.Slice(g.Flows, func(i, j int) bool {
		a, b := g.Flows[i], g.Flows[j]
		return a.Pipeline < b.Pipeline || (a.Pipeline == b.Pipeline && a.Flow < b.Flow)
	})
	for s := range sources {
		g.Sources = append(g.Sources, s)
	}
	sort.Strings(g.Sources)
	for e := range edges {
		g.Edges = append(g.Edges, e)
	}
	sort.Slice(g.Edges, func(i, j int) bool {
		a, b := g.Edges[i], g.Edges[j]
		if a.To != b.To {
			return a.To < b.To
		}
		if a.FromFlow != b.FromFlow {
			return a.FromFlow
		}
		return a.From < b.From
	})
	return g
}

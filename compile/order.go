package compile

import (
	"strings"

	"github.com/rwc-dev/rwc/diag"
)

// order links each flow to the flows whose targets it reads and sorts flows
// so that those run first. A cycle is an error: no order refreshes it.
func (p *Project) order() diag.List {
	var ds diag.List
	targets := map[string]*Flow{}
	for _, f := range p.Flows {
		targets[f.Table.QualifiedName()] = f
	}
	for _, f := range p.Flows {
		if f.Query == nil {
			continue
		}
		for _, ref := range f.Query.Tables {
			schema := ref.Schema
			if schema == "" {
				schema = "public" // PostgreSQL's default search_path
			}
			if dep := targets[schema+"."+ref.Name]; dep != nil {
				f.DependsOn = append(f.DependsOn, dep)
			}
		}
	}
	var sorted []*Flow
	state := map[*Flow]int{} // 0 new, 1 on the stack, 2 done
	var stack []*Flow
	var visit func(f *Flow)
	visit = func(f *Flow) {
		switch state[f] {
		case 2:
			return
		case 1:
			var names []string
			start := 0
			for i, s := range stack {
				if s == f {
					start = i
				}
			}
			for _, s := range stack[start:] {
				names = append(names, s.Name())
			}
			names = append(names, f.Name())
			ds.Errorf("RW308", f.Table.Query.Pos, "a flow cannot read its own target, directly or through other flows; read the sources instead",
				"flows read each other in a cycle: %s", strings.Join(names, " → "))
			return
		}
		state[f] = 1
		stack = append(stack, f)
		for _, d := range f.DependsOn {
			visit(d)
		}
		stack = stack[:len(stack)-1]
		state[f] = 2
		sorted = append(sorted, f)
	}
	for _, f := range p.Flows {
		visit(f)
	}
	p.Flows = sorted
	return ds
}

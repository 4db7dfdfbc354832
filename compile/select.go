package compile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rwc-dev/rwc/diag"
)

// Selection is the flows a --select chose, in dependency order: the one
// selection of rwc plan, rwc apply and rwc refresh.
//
// Selectors, dbt's: NAME (a flow), pipeline:NAME (its flows), +S (S and
// every flow upstream of it: those whose targets it reads, transitively),
// S+ (S and every flow downstream of it), +S+ (both). Several selectors
// (repeated --select, or separated by spaces or commas in one) select the
// union.
type Selection struct {
	Selectors []string
	Flows     []*Flow
	names     map[string]bool
}

// Has says whether the selection has the flow; a nil Selection has every
// flow.
func (s *Selection) Has(name string) bool { return s == nil || s.names[name] }

// Select resolves selectors against p. An unknown flow or pipeline is an
// error, with the closest name.
func Select(p *Project, selectors []string) (*Selection, error) {
	var words []string
	for _, s := range selectors {
		words = append(words, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })...)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("--select is empty: give a flow, pipeline:NAME, +FLOW (with its upstream) or FLOW+ (with its downstream)")
	}
	down := map[*Flow][]*Flow{}
	for _, f := range p.Flows {
		for _, d := range f.DependsOn {
			down[d] = append(down[d], f)
		}
	}
	chosen := map[*Flow]bool{}
	var walk func(f *Flow, next func(*Flow) []*Flow, seen map[*Flow]bool)
	walk = func(f *Flow, next func(*Flow) []*Flow, seen map[*Flow]bool) {
		if seen[f] {
			return
		}
		seen[f] = true
		chosen[f] = true
		for _, n := range next(f) {
			walk(n, next, seen)
		}
	}
	for _, w := range words {
		core := w
		up, dn := strings.HasPrefix(core, "+"), strings.HasSuffix(core, "+")
		core = strings.TrimSuffix(strings.TrimPrefix(core, "+"), "+")
		var roots []*Flow
		if name, ok := strings.CutPrefix(core, "pipeline:"); ok {
			var pipelines []string
			for _, f := range p.Flows {
				if f.Table.Pipeline.Name == name {
					roots = append(roots, f)
				}
				pipelines = append(pipelines, f.Table.Pipeline.Name)
			}
			if len(roots) == 0 {
				return nil, fmt.Errorf("--select %s: no pipeline %q%s", w, name, closest(name, pipelines))
			}
		} else {
			if strings.Contains(core, ":") {
				return nil, fmt.Errorf("--select %s: unknown selector method %q; rwc selects by flow name or pipeline:NAME", w, core[:strings.Index(core, ":")])
			}
			f := p.Flow(core)
			if f == nil {
				var names []string
				for _, f := range p.Flows {
					names = append(names, f.Name())
				}
				return nil, fmt.Errorf("--select %s: no flow %q%s", w, core, closest(core, names))
			}
			roots = []*Flow{f}
		}
		for _, f := range roots {
			chosen[f] = true
			if up {
				walk(f, func(f *Flow) []*Flow { return f.DependsOn }, map[*Flow]bool{})
			}
			if dn {
				walk(f, func(f *Flow) []*Flow { return down[f] }, map[*Flow]bool{})
			}
		}
	}
	s := &Selection{Selectors: words, names: map[string]bool{}}
	for _, f := range p.Flows { // p.Flows is in dependency order
		if chosen[f] {
			s.Flows = append(s.Flows, f)
			s.names[f.Name()] = true
		}
	}
	return s, nil
}

func closest(name string, names []string) string {
	if best := diag.Closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// Undeployed names, for each flow of head that differs from its deployed
// definition (base; nil: nothing deployed), what differs: "new", or its
// changes (column_added:x, query_changed, …). defs is diff.Classify's.
func Undeployed(base, head *Project, defs map[string]Definition) map[string]string {
	out := map[string]string{}
	for _, f := range head.Flows {
		if base == nil || base.Flow(f.Name()) == nil {
			out[f.Name()] = "new"
			continue
		}
		if d, ok := defs[f.Name()]; ok && len(d.Changes) > 0 {
			var cs []string
			for _, c := range d.Changes {
				cs = append(cs, c.String())
			}
			out[f.Name()] = strings.Join(cs, ", ")
		}
	}
	return out
}

// CheckOrder refuses a selection that would break dependency order: a
// selected flow that reads (directly or through other flows) the target of
// a flow left out whose definition is not deployed yet (undeployed, from
// Undeployed): it would run against that flow's old target, or none, and
// rwc apply would then record it as refreshed from sources that are not
// what the specs say. Select the upstream flow too (+FLOW). An upstream
// flow whose definition is deployed may be left out: its target is what
// its deployed spec makes, and only its routine refresh is skipped.
func (s *Selection) CheckOrder(undeployed map[string]string) error {
	if s == nil {
		return nil
	}
	var refused []string
	for _, f := range s.Flows {
		seen := map[*Flow]bool{}
		var missing []string
		var visit func(g *Flow)
		visit = func(g *Flow) {
			for _, d := range g.DependsOn {
				if seen[d] {
					continue
				}
				seen[d] = true
				if !s.Has(d.Name()) {
					if what, ok := undeployed[d.Name()]; ok {
						missing = append(missing, fmt.Sprintf("%s (%s)", d.Name(), what))
					}
				}
				visit(d)
			}
		}
		visit(f)
		if len(missing) > 0 {
			sort.Strings(missing)
			refused = append(refused, fmt.Sprintf("%s reads the target of %s, not deployed yet and not selected: select it too, with --select +%s",
				f.Name(), strings.Join(missing, ", "), f.Name()))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("the selection would break dependency order, nothing was changed: %s", strings.Join(refused, "; "))
	}
	return nil
}

// Only is p narrowed to the selection: its flows (in order) and their
// backfill files. A flow's DependsOn still names flows left out.
func (p *Project) Only(s *Selection) *Project {
	if s == nil {
		return p
	}
	q := &Project{Spec: p.Spec}
	for _, f := range p.Flows {
		if s.Has(f.Name()) {
			q.Flows = append(q.Flows, f)
		}
	}
	for _, b := range p.Backfills {
		if b.Flow != nil && s.Has(b.Flow.Name()) {
			q.Backfills = append(q.Backfills, b)
		}
	}
	return q
}

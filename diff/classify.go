package diff

import (
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Classify says what changed in the definition of each flow that both
// base (the deployed specs) and head (the work tree) define, with windows
// resolved at at in zone: predicates widened, narrowed, rewritten or not
// comparable (proven on the resolved windows, with the partition column's
// ranges gained and lost), queries changed, columns added, dropped or
// retyped, properties changed. A flow that changed nothing is left out;
// flows new or removed are the plan's to say.
func Classify(base, head *compile.Project, at time.Time, zone *time.Location) map[string]compile.Definition {
	out := map[string]compile.Definition{}
	if base == nil {
		return out
	}
	if zone == nil {
		zone = time.UTC
	}
	rc := predicate.Resolution{Now: at, Zone: zone}
	for _, f := range head.Flows {
		if old := base.Flow(f.Name()); old != nil {
			if d := classify(old, f, rc); len(d.Changes) > 0 {
				out[f.Name()] = d
			}
		}
	}
	return out
}

func classify(old, f *compile.Flow, rc predicate.Resolution) compile.Definition {
	var d compile.Definition
	add := func(k compile.ChangeKind) { d.Changes = append(d.Changes, compile.Change{Kind: k}) }
	if old.Predicate != nil && f.Predicate != nil {
		d.Window = predicateChange(old, f, rc, add)
	}
	if old.Fingerprint() != f.Fingerprint() {
		add(compile.ChangeQuery)
	}
	for _, c := range f.ColumnChanges(old.Columns()) {
		d.Changes = append(d.Changes, c.AsChange())
	}
	d.Changes = append(d.Changes, f.IndexDefinitionChanges(old)...)
	d.Changes = append(d.Changes, f.ExpectationChanges(old)...)
	if old.Immediate() != f.Immediate() {
		add(compile.ChangeMaintain)
	}
	if old.Table.ResetAllowed != f.Table.ResetAllowed || old.PartitionBy != f.PartitionBy {
		add(compile.ChangeProperties)
	}
	return d
}

// predicateChange classifies a changed window and returns the partition
// column's ranges it gains and loses (nil: not a range on it).
func predicateChange(old, f *compile.Flow, rc predicate.Resolution, add func(compile.ChangeKind)) *predicate.Change {
	ow, err1 := old.Predicate.Resolve(rc)
	nw, err2 := f.Predicate.Resolve(rc)
	if err1 != nil || err2 != nil || ow.Root.CEL() == nw.Root.CEL() {
		return nil
	}
	narrower, wider := predicate.Contains(ow, nw), predicate.Contains(nw, ow)
	switch {
	case narrower && wider:
		add(compile.ChangePredicateRewritten)
	case narrower:
		add(compile.ChangePredicateNarrowed)
	case wider:
		add(compile.ChangePredicateWidened)
	default:
		add(compile.ChangePredicateNotComparable)
	}
	if f.PartitionBy == "" {
		return nil
	}
	if delta, ok := predicate.Delta(ow, nw, f.PartitionBy); ok {
		return &delta
	}
	return nil
}

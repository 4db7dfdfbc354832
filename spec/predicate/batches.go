package predicate

import "fmt"

// Batches splits a backfill's predicate p into ranges of at most days days
// along the date column col, leaving out what exclude (the flow's window,
// which its own refresh recomputes anyway) covers. It returns the batches as
// CEL predicates, each p narrowed to its range, in date order. ok is false
// when p is not a bounded range of col alone (then it runs as one batch);
// exclusion is only applied when exclude, too, constrains col alone.
func Batches(p, exclude *Predicate, col string, days int) (batches []string, ok bool) {
	set, exact, okp := projection(p.Root, col)
	if !okp || !exact || days <= 0 {
		return nil, false
	}
	if exclude != nil {
		if ex, exExact, okx := projection(exclude.Root, col); okx && exExact {
			set = set.minus(ex)
		}
	}
	for _, iv := range set {
		lo, okLo := dateBound(iv.lo)
		hi, okHi := dateBound(iv.hi)
		if !okLo || !okHi {
			return nil, false
		}
		for start := lo; start <= hi; {
			// Compared as hi-start, never start+days: a batch of
			// 9223372036854775807d (the spec allows any number) would wrap.
			end := hi
			if int64(hi-start) >= int64(days) {
				end = start + Date(days-1)
			}
			batches = append(batches, fmt.Sprintf("(%s) && %s >= date('%s') && %s <= date('%s')", p.Root.CEL(), col, start, col, end))
			if end == hi {
				break
			}
			start = end + 1
		}
	}
	return batches, true
}

// dateBound reads a closed date bound; ranges of dates are normalised to
// closed bounds, so an open or infinite one means "unbounded".
func dateBound(b bound) (Date, bool) {
	d, ok := b.v.(Date)
	if !ok || !b.incl {
		return 0, false
	}
	return d, true
}

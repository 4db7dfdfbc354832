package predicate

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestBatches(t *testing.T) {
	cols := testColumns(t)
	at := Resolution{Now: time.Date(2026, 1, 25, 12, 0, 0, 0, time.UTC)}
	window := mustResolve(t, "date >= date_add(current_date(), -7)", cols, at) // from 2026-01-18
	cases := []struct {
		where   string
		exclude *Predicate
		days    int
		want    []string
		ok      bool
	}{
		{"date >= '2026-01-01' && date <= '2026-01-10'", nil, 7, []string{"2026-01-01..2026-01-07", "2026-01-08..2026-01-10"}, true},
		{"date >= '2026-01-01' && date <= '2026-01-30'", window, 7, []string{"2026-01-01..2026-01-07", "2026-01-08..2026-01-14", "2026-01-15..2026-01-17"}, true},
		{"date >= '2026-01-20' && date <= '2026-01-22'", window, 7, nil, true}, // all inside the window
		{"date in ['2026-01-01', '2026-01-09']", nil, 7, []string{"2026-01-01..2026-01-01", "2026-01-09..2026-01-09"}, true},
		{"date >= '2026-01-01'", nil, 7, nil, false},                                          // unbounded
		{"date >= '2026-01-01' && date <= '2026-01-03' && region == 'x'", nil, 7, nil, false}, // not date alone
		// batch: 9223372036854775807d once made start+days wrap around and loop forever.
		{"date >= '2026-01-01' && date <= '2026-01-10'", nil, math.MaxInt, []string{"2026-01-01..2026-01-10"}, true},
		{"date >= '2026-01-01' && date <= '2026-01-10'", nil, 10, []string{"2026-01-01..2026-01-10"}, true},
	}
	for _, c := range cases {
		p := mustResolve(t, c.where, cols, at)
		got, ok := Batches(p, c.exclude, "date", c.days)
		if ok != c.ok {
			t.Errorf("%s: ok %v", c.where, ok)
			continue
		}
		var ranges []string
		for _, b := range got {
			q := mustResolve(t, b, cols, at)
			set, _, _ := projection(q.Root, "date")
			lo, _ := dateBound(set[0].lo)
			hi, _ := dateBound(set[0].hi)
			ranges = append(ranges, lo.String()+".."+hi.String())
		}
		if !reflect.DeepEqual(ranges, c.want) {
			t.Errorf("%s: %v, want %v", c.where, ranges, c.want)
		}
	}
}

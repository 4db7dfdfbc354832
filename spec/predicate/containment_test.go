package predicate

import (
	"testing"
	"time"
)

// TestContains is the containment prover's table: does the new window
// (resolved at t2) lie inside the old one (resolved at t1)?
func TestContains(t *testing.T) {
	day := func(d int) Resolution { return Resolution{Now: time.Date(2026, 11, d, 12, 0, 0, 0, time.UTC)} }
	t1, t2 := day(20), day(21)
	cases := []struct {
		old, new string
		at1, at2 Resolution
		want     bool
	}{
		// Moving windows.
		{"date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -30)", t1, t1, false}, // 7→30 widens
		{"date >= date_add(current_date(), -30)", "date >= date_add(current_date(), -7)", t1, t1, true},  // 30→7 narrows
		{"date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -7)", t1, t2, true},   // lower bound moves up
		{"date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -7)", t2, t1, false},  // time going back
		{"date >= date_add(current_date(), -7) && date <= current_date()", "date >= date_add(current_date(), -7) && date <= current_date()", t1, t2, false},
		{"date >= date_add(current_date(), -7) && date <= current_date()", "date >= date_add(current_date(), -7) && date <= current_date()", t1, t1, true},
		{"date == current_date()", "date == current_date()", t1, t2, false},
		{"date >= date_sub(current_date(), 3)", "date > date_sub(current_date(), 4)", t1, t1, true}, // same set, other spelling
		{"date > date_sub(current_date(), 4)", "date >= date_sub(current_date(), 3)", t1, t1, true},
		{"date >= '2026-01-01'", "date >= '2026-01-02'", t1, t1, true},
		{"date >= '2026-01-02'", "date >= '2026-01-01'", t1, t1, false},
		{"date >= '2026-01-01' && date < '2026-02-01'", "date >= '2026-01-10' && date <= '2026-01-31'", t1, t1, true},
		{"date >= '2026-01-01' && date < '2026-02-01'", "date >= '2026-01-10' && date <= '2026-02-01'", t1, t1, false},
		{"date >= '2026-01-01'", "date in ['2026-01-05', '2026-03-01']", t1, t1, true},
		{"date in ['2026-01-05', '2026-03-01']", "date == '2026-01-05'", t1, t1, true},
		{"date in ['2026-01-05']", "date in ['2026-01-05', '2026-01-06']", t1, t1, false},
		{"date >= '2026-01-01' && date <= '2026-01-03'", "date in ['2026-01-01', '2026-01-02', '2026-01-03']", t1, t1, true},
		{"date in ['2026-01-01', '2026-01-02', '2026-01-03']", "date >= '2026-01-01' && date <= '2026-01-03'", t1, t1, true}, // discrete days
		{"date_add(date, 1) >= '2026-01-02'", "date >= '2026-01-01'", t1, t1, true},
		{"date >= '2026-01-01'", "date_sub(date, 1) >= '2026-01-01'", t1, t1, true},
		// Adding and removing conjuncts.
		{"date >= '2026-01-01'", "date >= '2026-01-01' && region == 'asia'", t1, t1, true},
		{"date >= '2026-01-01' && region == 'asia'", "date >= '2026-01-01'", t1, t1, false},
		{"region == 'asia'", "region in ['asia', 'emea']", t1, t1, false},
		{"region in ['asia', 'emea']", "region == 'asia'", t1, t1, true},
		{"region != 'asia'", "region == 'emea'", t1, t1, true},
		{"region == 'emea'", "region != 'asia'", t1, t1, false},
		{"!(region == 'asia')", "region in ['emea', 'amer']", t1, t1, true},
		{"!(region in ['asia', 'emea'])", "region == 'amer'", t1, t1, true},
		{"!(region in ['asia', 'emea'])", "region == 'asia'", t1, t1, false},
		{"region >= 'a' && region < 'b'", "region == 'apple'", t1, t1, true},
		{"region < 'b'", "region == 'B'", t1, t1, true}, // byte order: 'B' < 'b'
		// Disjunctions split into boxes.
		{"date >= '2026-01-01' || region == 'asia'", "region == 'asia'", t1, t1, true},
		{"date >= '2026-01-01' || region == 'asia'", "date >= '2026-02-01'", t1, t1, true},
		{"date >= '2026-01-01' || region == 'asia'", "date >= '2025-12-01'", t1, t1, false},
		{"date >= '2026-01-01'", "date >= '2026-02-01' || date == '2026-01-15'", t1, t1, true},
		{"date >= '2026-01-01'", "date >= '2026-02-01' || date == '2025-01-15'", t1, t1, false},
		{"date < '2026-01-01' || date >= '2026-01-01'", "date == '2026-05-05'", t1, t1, true},
		{"(date >= '2026-01-01' || date < '2025-01-01') && region == 'x'", "date == '2026-03-01' && region == 'x'", t1, t1, true},
		{"!(date >= '2026-01-01' && region == 'x')", "date < '2026-01-01'", t1, t1, true},
		{"!(date >= '2026-01-01' && region == 'x')", "region == 'y'", t1, t1, true},
		{"!(date >= '2026-01-01' && region == 'x')", "region == 'x'", t1, t1, false},
		// Contradictions are empty windows: inside anything.
		{"date >= '2026-01-01'", "date > '2026-02-01' && date < '2026-01-01'", t1, t1, true},
		{"region == 'a'", "region == 'b' && region == 'c'", t1, t1, true},
		// Numbers.
		{"qty > 10", "qty >= 11", t1, t1, true},
		{"qty >= 11", "qty > 10", t1, t1, true},
		{"qty > 10", "qty > 10.5", t1, t1, true},
		{"qty > 10.5", "qty >= 11", t1, t1, true},
		{"qty < 2.5", "qty <= 2", t1, t1, true},
		{"price > 10", "price > 10.5", t1, t1, true},
		{"price > 10.5", "price > 10", t1, t1, false},
		{"price >= 1 && price <= 2", "price == 1.5", t1, t1, true},
		{"id in [1, 2, 3]", "id == 2", t1, t1, true},
		{"id in [1, 2, 3]", "id >= 1 && id <= 3", t1, t1, true},
		{"id in [1, 3]", "id >= 1 && id <= 3", t1, t1, false},
		// Booleans.
		{"active", "active == true", t1, t1, true},
		{"!active", "active == false", t1, t1, true},
		{"active == false", "!active", t1, t1, true},
		{"active", "!active", t1, t1, false},
		// Timestamps.
		{"ts >= timestamp('2026-01-01T00:00:00Z')", "ts >= timestamp('2026-01-02T00:00:00Z')", t1, t1, true},
		{"ts >= current_timestamp()", "ts >= current_timestamp()", t1, t2, true},
		{"ts >= current_timestamp()", "ts >= current_timestamp()", t2, t1, false},
		// What rwc cannot reason about is never "contained" unless identical.
		{"region.startsWith('a')", "region.startsWith('a')", t1, t1, true},
		{"region.startsWith('a')", "region.startsWith('ab')", t1, t1, false},
		{"region.startsWith('a') && date >= '2026-01-01'", "region.startsWith('a') && date >= '2026-02-01'", t1, t1, true},
		{"date >= '2026-01-01'", "rand() < 0.5 && date >= '2026-02-01'", t1, t1, true},
		{"rand() < 0.5", "rand() < 0.5", t1, t1, true}, // textual; determinism is judged elsewhere
		{"qty > id", "qty > id && date >= '2026-01-01'", t1, t1, true},
		{"qty > id", "qty >= id", t1, t1, false},
		// NULL-able columns: a window never holds NULLs of the columns it
		// constrains, so dropping a constraint widens (NULLs come in).
		{"region == 'x' || region != 'x'", "date >= '2026-01-01'", t1, t1, false},
		{"date >= '2026-01-01'", "date >= '2026-01-01' && (region == 'x' || region != 'x')", t1, t1, true},
	}
	cols := testColumns(t)
	for i, c := range cases {
		old := mustResolve(t, c.old, cols, c.at1)
		new := mustResolve(t, c.new, cols, c.at2)
		if got := Contains(old, new); got != c.want {
			t.Errorf("case %d: Contains(old=%s @%s, new=%s @%s) = %v, want %v", i, c.old, c.at1.Now.Format("01-02"), c.new, c.at2.Now.Format("01-02"), got, c.want)
		}
	}
	if len(cases) < 60 {
		t.Errorf("keep at least 60 containment cases (have %d)", len(cases))
	}
}

func mustResolve(t *testing.T, text string, cols []Column, rc Resolution) *Predicate {
	t.Helper()
	p, issues := Compile(text, cols)
	if len(issues) > 0 {
		t.Fatalf("%s: %v", text, issues)
	}
	r, err := p.Resolve(rc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDelta(t *testing.T) {
	cols := testColumns(t)
	at := Resolution{Now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	cases := []struct {
		old, new, gained, lost string
		gainedDays, lostDays   int64
	}{
		{"date >= date_add(current_date(), -7)", "date >= date_add(current_date(), -29)", "+[2026-10-30, 2026-11-20]", "", 22, 0},
		{"date >= date_add(current_date(), -29)", "date >= date_add(current_date(), -7)", "", "-[2026-10-30, 2026-11-20]", 0, 22},
		{"date >= '2026-01-01' && date <= '2026-01-31'", "date >= '2026-01-15' && date <= '2026-02-10'", "+[2026-02-01, 2026-02-10]", "-[2026-01-01, 2026-01-14]", 10, 14},
		{"date > '2026-01-01' && date < '2026-01-31'", "date > '2026-01-05'", "+[2026-01-31, +∞)", "-[2026-01-02, 2026-01-05]", 0, 4},
	}
	for _, c := range cases {
		ch, ok := Delta(mustResolve(t, c.old, cols, at), mustResolve(t, c.new, cols, at), "date")
		if !ok || ch.Gained != c.gained || ch.Lost != c.lost || !ch.Exact || ch.GainedDays != c.gainedDays || ch.LostDays != c.lostDays {
			t.Errorf("%s → %s: %+v %v; want gained %q (%d days) lost %q (%d days)", c.old, c.new, ch, ok, c.gained, c.gainedDays, c.lost, c.lostDays)
		}
	}
}

package predicate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestContainsSound checks the prover against evaluation: whenever it says
// new ⊆ old, no generated row is in new's window and outside old's. (It may
// say "not contained" for contained pairs; that only costs a fallback.)
func TestContainsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	cols := testColumns(t)
	at := Resolution{Now: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)}
	gen := func() string { return genContainPred(rng, 3) }
	var rows []map[string]Value
	for i := 0; i < 300; i++ {
		row := map[string]Value{
			"date":   Date(20454 + rng.IntN(40) - 20), // around 2026-01-01
			"qty":    int64(rng.IntN(12)),
			"region": []string{"a", "b", "asia", "emea", "B"}[rng.IntN(5)],
			"active": rng.IntN(2) == 0,
		}
		for k := range row {
			if rng.IntN(10) == 0 {
				row[k] = nil
			}
		}
		rows = append(rows, row)
	}
	proved := 0
	for i := 0; i < 3000; i++ {
		ot, nt := gen(), gen()
		if rng.IntN(3) == 0 {
			nt = "(" + ot + ") && " + nt // often narrower
		}
		old, issues := Compile(ot, cols)
		if len(issues) > 0 {
			t.Fatalf("%s: %v", ot, issues)
		}
		new, issues := Compile(nt, cols)
		if len(issues) > 0 {
			t.Fatalf("%s: %v", nt, issues)
		}
		if !Contains(old, new) {
			continue
		}
		proved++
		for _, row := range rows {
			inNew, _ := new.Eval(row, at)
			inOld, _ := old.Eval(row, at)
			if inNew && !inOld {
				t.Fatalf("Contains(old=%s, new=%s) but row %v is in new and not in old", ot, nt, row)
			}
		}
	}
	if proved < 300 {
		t.Errorf("only %d of 3000 pairs proved contained: the generator or the prover is off", proved)
	}
}

func genContainPred(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(3) == 0 {
		ops := []string{"<", "<=", ">", ">=", "==", "!="}
		switch rng.IntN(5) {
		case 0:
			return fmt.Sprintf("date %s date('2026-01-%02d')", ops[rng.IntN(6)], 1+rng.IntN(28))
		case 1:
			return fmt.Sprintf("qty %s %d", ops[rng.IntN(6)], rng.IntN(12))
		case 2:
			return fmt.Sprintf("region %s '%s'", ops[rng.IntN(6)], []string{"a", "asia", "b", "B"}[rng.IntN(4)])
		case 3:
			var vals []string
			for i := 0; i <= rng.IntN(3); i++ {
				vals = append(vals, fmt.Sprintf("%d", rng.IntN(12)))
			}
			return "qty in [" + strings.Join(vals, ", ") + "]"
		default:
			return []string{"active", "!active", "date_add(date, 3) >= date('2026-01-10')"}[rng.IntN(3)]
		}
	}
	switch rng.IntN(3) {
	case 0:
		return "(" + genContainPred(rng, depth-1) + " && " + genContainPred(rng, depth-1) + ")"
	case 1:
		return "(" + genContainPred(rng, depth-1) + " || " + genContainPred(rng, depth-1) + ")"
	}
	return "!(" + genContainPred(rng, depth-1) + ")"
}

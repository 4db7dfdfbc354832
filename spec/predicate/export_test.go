package predicate

import "testing"

// The differential test's generator, for the external test of the
// Databricks translation (databricks_test.go), which lives here to reuse
// it: its predicates and rows are the hardest this package knows.

type Gen = gen

func NewGen(seed uint64, rounds int) *Gen { return newGen(seed, rounds) }

func (g *gen) Predicate() string { return g.predicate() }

func (g *gen) Rows(n int) []map[string]Value { return append(g.rows(n), g.edgeRows()...) }

func (g *gen) Resolutions() []Resolution { return g.res }

func DiffColumns(t testing.TB) []Column { return diffColumns(t) }

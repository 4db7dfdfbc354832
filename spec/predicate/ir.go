package predicate

import (
	"fmt"
	"time"

	"github.com/rwc-dev/rwc/spec/pgtype"
)

// Kind is the CEL-level type of an expression.
type Kind int

const (
	KBool Kind = iota
	KInt
	KDouble
	KString
	KDate
	KTimestamp
)

var kindNames = [...]string{"bool", "int", "double", "string", "date", "timestamp"}

func (k Kind) String() string { return kindNames[k] }

// Op is one construct of the accepted language. The set is closed: the
// compiler only builds these, and the SQL renderer handles every one, which
// is what makes translation total.
type Op int

const (
	OpCol Op = iota
	OpLit
	OpAnd
	OpOr
	OpNot
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpIn // Args[0] in Args[1:] (literals)
	OpStartsWith
	OpEndsWith
	OpContains
	OpCurrentDate      // per refresh
	OpCurrentTimestamp // per refresh
	OpDateAdd          // Args[0] + N days
	OpRand             // non-deterministic
)

// Expr is the typed tree a predicate compiles to. Constant sub-trees are
// folded, date_sub is date_add with -N, and date/timestamp literals and ISO
// strings compared with dates are already typed values.
type Expr struct {
	Op   Op
	Kind Kind
	Args []*Expr
	Col  *Column // OpCol
	Val  any     // OpLit: bool, int64, float64, string, Date, time.Time
	N    int64   // OpDateAdd
	// At is where the construct starts in the predicate text.
	At Loc
}

// Column is a declared target column that a predicate may use.
type Column struct {
	Name string
	Type pgtype.Type
}

// Determinism classifies a predicate by the least deterministic function it calls.
type Determinism int

const (
	Immutable        Determinism = iota // same window forever
	PerRefresh                          // current_date()/current_timestamp(): resolved once per refresh
	NonDeterministic                    // rand(): a different window on every evaluation
)

func (d Determinism) String() string {
	return [...]string{"immutable", "per_refresh", "non_deterministic"}[d]
}

// Loc is a 1-based line and column (in characters) inside a predicate's text.
type Loc struct{ Line, Column int }

func lit(k Kind, v any, at Loc) *Expr { return &Expr{Op: OpLit, Kind: k, Val: v, At: at} }

// walk visits e and its descendants, parents first.
func (e *Expr) walk(f func(*Expr)) {
	f(e)
	for _, a := range e.Args {
		a.walk(f)
	}
}

// determinism is the least deterministic function in e.
func (e *Expr) determinism() Determinism {
	d := Immutable
	e.walk(func(x *Expr) {
		switch x.Op {
		case OpCurrentDate, OpCurrentTimestamp:
			if d < PerRefresh {
				d = PerRefresh
			}
		case OpRand:
			d = NonDeterministic
		}
	})
	return d
}

// Resolved returns a copy of e with per-refresh functions replaced by their
// values at rc, then folded. Folding fails when date arithmetic on the
// current date leaves years 1..9999.
func (e *Expr) resolve(rc Resolution) (*Expr, error) {
	c := *e
	switch e.Op {
	case OpCurrentDate:
		return lit(KDate, DateOf(rc.Now.In(rc.loc())), e.At), nil
	case OpCurrentTimestamp:
		return lit(KTimestamp, rc.Now.UTC().Truncate(time.Microsecond), e.At), nil
	}
	c.Args = make([]*Expr, len(e.Args))
	for i, a := range e.Args {
		r, err := a.resolve(rc)
		if err != nil {
			return nil, err
		}
		c.Args[i] = r
	}
	if c.Op == OpDateAdd && c.Args[0].Op == OpLit {
		d, err := c.Args[0].Val.(Date).AddDays(c.N)
		if err != nil {
			return nil, fmt.Errorf("%d:%d: %v", e.At.Line, e.At.Column, err)
		}
		return lit(KDate, d, e.At), nil
	}
	return &c, nil
}

// Resolution fixes the instant and zone that per-refresh functions read.
type Resolution struct {
	Now time.Time
	// Zone decides which calendar day current_date() is; nil means UTC.
	Zone *time.Location
}

// Today is current_date() at rc: the calendar day of Now in Zone.
func (rc Resolution) Today() Date { return DateOf(rc.Now.In(rc.loc())) }

func (rc Resolution) loc() *time.Location {
	if rc.Zone == nil {
		return time.UTC
	}
	return rc.Zone
}

// Mirror is the comparison with its operands swapped: a < b is b > a.
func Mirror(op Op) Op {
	switch op {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return op
}

// Negate is the comparison that is TRUE exactly where op is FALSE (both are
// NULL where either operand is): !(a < b) is a >= b.
func Negate(op Op) Op {
	switch op {
	case OpLt:
		return OpGe
	case OpLe:
		return OpGt
	case OpGt:
		return OpLe
	case OpGe:
		return OpLt
	case OpEq:
		return OpNe
	case OpNe:
		return OpEq
	}
	return op
}

package predicate

import (
	"fmt"
	"reflect"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// DateType is rwc's calendar date: a day, with no time of day and no zone,
// exactly what a PostgreSQL `date` column holds. It has the Comparer trait:
// the standard library's <, <=, >, >= bind one implementation for all types
// (calling Compare on values whose type has that trait), and a function with
// such a binding cannot take overloads with bindings of their own.
var DateType = cel.ObjectType("rwc.date", traits.ComparerType)

// Date counts days since 1970-01-01. It implements ref.Val so CEL can carry
// it, and traits.Comparer so the comparison operators work on it.
type Date int64

// Dates outside years 1..9999 cannot be written as ISO literals, so they are
// outside the language; arithmetic that leaves the range is an error.
var (
	minDate = DateOf(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	maxDate = DateOf(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
)

// MinDate and MaxDate are the first and the last day the language knows.
var MinDate, MaxDate = minDate, maxDate

// DateOf takes the calendar day of t in t's own location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	u := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return Date(floorDiv(u.Unix(), 86400))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// ParseDate accepts exactly YYYY-MM-DD, the form PostgreSQL prints.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil || len(s) != 10 {
		return 0, fmt.Errorf("%q is not an ISO date (YYYY-MM-DD)", s)
	}
	return DateOf(t), nil
}

// Time is midnight UTC of the day.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String renders YYYY-MM-DD.
func (d Date) String() string { return d.Time().Format("2006-01-02") }

// AddDays shifts by n days, failing outside years 1..9999.
func (d Date) AddDays(n int64) (Date, error) {
	r := d + Date(n)
	if (n > 0 && r < d) || (n < 0 && r > d) || r < minDate || r > maxDate {
		return 0, fmt.Errorf("date out of range: %s %+d days", d, n)
	}
	return r, nil
}

// ConvertToNative implements ref.Val.
func (d Date) ConvertToNative(typeDesc reflect.Type) (any, error) {
	switch typeDesc {
	case reflect.TypeOf(d):
		return d, nil
	case reflect.TypeOf(time.Time{}):
		return d.Time(), nil
	case reflect.TypeOf(""):
		return d.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from date to %v", typeDesc)
}

// ConvertToType implements ref.Val.
func (d Date) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case DateType:
		return d
	case types.StringType:
		return types.String(d.String())
	case types.TypeType:
		return DateType
	}
	return types.NewErr("type conversion error from date to %v", t)
}

// Equal implements ref.Val.
func (d Date) Equal(other ref.Val) ref.Val {
	o, ok := other.(Date)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(d == o)
}

// Compare implements traits.Comparer.
func (d Date) Compare(other ref.Val) ref.Val {
	o, ok := other.(Date)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	switch {
	case d < o:
		return types.IntNegOne
	case d > o:
		return types.IntOne
	}
	return types.IntZero
}

// Type implements ref.Val.
func (d Date) Type() ref.Type { return DateType }

// Value implements ref.Val.
func (d Date) Value() any { return d }

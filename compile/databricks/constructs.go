// Package databricks translates between Databricks pipeline SQL (Lakeflow
// Spark Declarative Pipelines' REPLACE WHERE flows) and rwc specs: rwc
// import reads CREATE … STREAMING TABLE … FLOW REPLACE WHERE, CREATE FLOW …
// INSERT INTO … BY NAME REPLACE WHERE and replace_where_overrides; rwc
// export writes them. docs/databricks.md is the user's side of it.
package databricks

import "github.com/rwc-dev/rwc/spec/predicate"

// form is how a construct is written.
type form int

const (
	infix   form = iota // a OP b
	prefix              // OP a
	call                // f(a, …), in both languages
	method              // a.f(b) in CEL, f(a, b) in Spark SQL
	niladic             // f()
	inList              // a in [b, c] in CEL, a IN (b, c) in Spark SQL
)

// construct is one predicate construct in both languages. The table is the
// translation: import reads Spark SQL's spellings (spark and also) into
// CEL's, export writes an IR node's Spark spelling. Every predicate.Op
// the language has is here once with export set; rows with importOnly are
// Spark spellings import also reads.
type construct struct {
	op    predicate.Op
	form  form
	cel   string
	spark string
	// also are further Spark spellings import reads.
	also []string
	// negate: the Spark construct is the CEL one negated (NOT IN).
	negate     bool
	importOnly bool
}

var constructs = []construct{
	{op: predicate.OpAnd, form: infix, cel: "&&", spark: "AND"},
	{op: predicate.OpOr, form: infix, cel: "||", spark: "OR"},
	{op: predicate.OpNot, form: prefix, cel: "!", spark: "NOT", also: []string{"!"}},
	{op: predicate.OpEq, form: infix, cel: "==", spark: "=", also: []string{"=="}},
	{op: predicate.OpNe, form: infix, cel: "!=", spark: "<>", also: []string{"!="}},
	{op: predicate.OpLt, form: infix, cel: "<", spark: "<"},
	{op: predicate.OpLe, form: infix, cel: "<=", spark: "<="},
	{op: predicate.OpGt, form: infix, cel: ">", spark: ">"},
	{op: predicate.OpGe, form: infix, cel: ">=", spark: ">="},
	{op: predicate.OpIn, form: inList, cel: "in", spark: "IN"},
	{op: predicate.OpIn, form: inList, cel: "in", spark: "NOT IN", negate: true, importOnly: true},
	{op: predicate.OpStartsWith, form: method, cel: "startsWith", spark: "startswith"},
	{op: predicate.OpEndsWith, form: method, cel: "endsWith", spark: "endswith"},
	{op: predicate.OpContains, form: method, cel: "contains", spark: "contains"},
	{op: predicate.OpDateAdd, form: call, cel: "date_add", spark: "date_add", also: []string{"dateadd"}},
	{op: predicate.OpDateAdd, form: call, cel: "date_sub", spark: "date_sub", importOnly: true},
	{op: predicate.OpCurrentDate, form: niladic, cel: "current_date", spark: "current_date", also: []string{"curdate"}},
	{op: predicate.OpCurrentTimestamp, form: niladic, cel: "current_timestamp", spark: "current_timestamp", also: []string{"now"}},
	{op: predicate.OpRand, form: niladic, cel: "rand", spark: "rand", also: []string{"random"}},
}

// sparkOf is the construct export writes for op.
func sparkOf(op predicate.Op) (construct, bool) {
	for _, c := range constructs {
		if c.op == op && !c.importOnly {
			return c, true
		}
	}
	return construct{}, false
}

// fromSpark is the construct a Spark spelling of the given form stands for.
func fromSpark(f form, name string) (construct, bool) {
	for _, c := range constructs {
		if c.form != f && !(f == call && (c.form == method || c.form == niladic)) {
			continue
		}
		if c.spark == name {
			return c, true
		}
		for _, a := range c.also {
			if a == name {
				return c, true
			}
		}
	}
	return construct{}, false
}

package predicate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

// Issue is a problem in a predicate, positioned inside its text. The spec
// layer turns it into a file:line:col diagnostic.
type Issue struct {
	Code    string
	At      Loc
	Message string
	Hint    string
}

// Predicate is a compiled, type-checked window predicate.
type Predicate struct {
	Text    string
	Version int
	Root    *Expr
	// Columns are the columns the predicate reads, sorted.
	Columns     []string
	Determinism Determinism
	env         *cel.Env
	checked     *cel.Ast
	mu          sync.Mutex
	programs    map[Resolution]cel.Program
	resolved    map[Resolution]*Predicate
}

// supported lists every function the language has, with the hint shown
// when it is misused; anything else is RW204.
var supported = map[string]bool{
	operators.LogicalAnd: true, operators.LogicalOr: true, operators.LogicalNot: true,
	operators.Equals: true, operators.NotEquals: true, operators.Less: true, operators.LessEquals: true,
	operators.Greater: true, operators.GreaterEquals: true, operators.In: true,
	"startsWith": true, "endsWith": true, "contains": true,
	"current_date": true, "current_timestamp": true, "date": true, "date_add": true, "date_sub": true,
	"timestamp": true, "rand": true,
}

const supportedList = "&&, ||, !, ==, !=, <, <=, >, >=, in [list], startsWith, endsWith, contains, " +
	"date('YYYY-MM-DD'), date_add(d, n), date_sub(d, n), current_date(), timestamp('RFC 3339'), current_timestamp(), rand()"

// Compile parses and type-checks text against the table's columns and
// lowers it to the closed Expr tree. Either the predicate or issues is set.
func Compile(text string, cols []Column) (*Predicate, []Issue) {
	key := cacheKey(text, cols)
	if p, ok := compiled.Load(key); ok {
		return p.(*Predicate), nil
	}
	p, issues := compileText(text, cols)
	if p != nil {
		if compiledN.Add(1) > maxCompiled {
			compiled.Clear()
			compiledN.Store(0)
		}
		compiled.Store(key, p)
	}
	return p, issues
}

// compiled caches predicates by text and column types: projects repeat
// the same window on many tables, and plans and refreshes compile the same
// resolved text again and again. A Predicate is immutable once compiled
// (its caches are guarded), so sharing one is safe.
var (
	compiled  sync.Map
	compiledN atomic.Int64
)

const maxCompiled = 8192

func cacheKey(text string, cols []Column) string {
	var b strings.Builder
	b.WriteString(text)
	for _, c := range cols {
		b.WriteString("\x00" + c.Name + ":" + c.Type.Canonical)
	}
	return b.String()
}

func compileText(text string, cols []Column) (*Predicate, []Issue) {
	return compileWith(text, cols, true)
}

// compileWith is compileText; habits says whether to read a predicate that
// fails as SQL (sqlHabits), which checks its own rewrite with habits off.
func compileWith(text string, cols []Column, habits bool) (*Predicate, []Issue) {
	c := &compiler{text: text, cols: map[string]Column{}, sqlHabits: habits}
	for _, col := range cols {
		c.cols[col.Name] = col
	}
	p := c.compile()
	if len(c.issues) > 0 {
		sort.SliceStable(c.issues, func(i, j int) bool {
			a, b := c.issues[i].At, c.issues[j].At
			return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
		})
		return nil, c.issues
	}
	return p, nil
}

type compiler struct {
	text   string
	cols   map[string]Column
	issues []Issue
	info   *ast.SourceInfo
	parsed *ast.AST
	// sqlHabits: report SQL habits in a predicate that fails (habits).
	sqlHabits bool
}

func (c *compiler) errAt(at Loc, code, hint, format string, args ...any) {
	c.issues = append(c.issues, Issue{Code: code, At: at, Message: fmt.Sprintf(format, args...), Hint: hint})
}

func (c *compiler) loc(id int64) Loc {
	l := c.info.GetStartLocation(id)
	return Loc{Line: l.Line(), Column: l.Column() + 1}
}

func (c *compiler) compile() *Predicate {
	if strings.TrimSpace(c.text) == "" {
		c.errAt(Loc{1, 1}, "RW201", "write a boolean CEL expression over the table's columns, e.g. date >= date_add(current_date(), -7)", "the predicate is empty")
		return nil
	}
	env, err := base()
	if err != nil {
		c.errAt(Loc{1, 1}, "RW201", "", "internal: %v", err)
		return nil
	}
	var vars []cel.EnvOption
	for _, col := range c.cols {
		if t := celType(col.Type.Family); t != nil {
			vars = append(vars, cel.Variable(col.Name, t))
		}
	}
	env, err = env.Extend(vars...)
	if err != nil {
		c.errAt(Loc{1, 1}, "RW203", "", "cannot declare the table's columns: %v", err)
		return nil
	}
	parsed, iss := env.Parse(c.text)
	if iss.Err() != nil {
		if c.habits() {
			return nil
		}
		for _, e := range iss.Errors() {
			code, hint := "RW201", "check the CEL syntax: operators are &&, ||, !, strings use quotes"
			if strings.Contains(e.Message, "exceed") || strings.Contains(e.Message, "recursion") {
				code, hint = "RW209", "split the predicate or simplify it; window predicates are short"
			}
			c.errAt(issueLoc(e.Location.Line(), e.Location.Column()+1), code, hint, "%s", e.Message)
		}
		return nil
	}
	c.parsed = parsed.NativeRep()
	c.info = c.parsed.SourceInfo()
	if !c.screen(c.parsed.Expr()) {
		c.habits()
		return nil
	}
	c.typeLiterals(c.parsed.Expr())
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			l := issueLoc(e.Location.Line(), e.Location.Column()+1)
			c.checkerIssue(l.Line, l.Column, e.Message)
		}
		c.habits()
		return nil
	}
	if checked.OutputType() != cel.BoolType {
		c.errAt(Loc{1, 1}, "RW207", "compare a column with a value, e.g. date >= date('2026-01-01')",
			"the predicate has type %s; a window predicate must be a bool", checked.OutputType())
		return nil
	}
	native := checked.NativeRep()
	root := c.lower(native, native.Expr())
	if len(c.issues) > 0 {
		return nil
	}
	p := &Predicate{Text: c.text, Version: EnvVersion, Root: root, env: env, checked: checked}
	p.Determinism = root.determinism()
	p.Columns = root.columns()
	return p
}

// habits replaces the issues found so far with the SQL habits in the
// predicate, each with its CEL spelling, when it has any (sqlhabits.go):
// cel-go's messages about them only confuse. It says whether it did.
func (c *compiler) habits() bool {
	if !c.sqlHabits {
		return false
	}
	found := sqlHabits(c.text, c.cols)
	if len(found) == 0 {
		return false
	}
	c.issues = found
	return true
}

// issueLoc is where an issue from cel-go points, or the start of the
// predicate when cel-go has no location (its error-recovery limit, say).
func issueLoc(line, col int) Loc {
	if line < 1 || col < 1 {
		return Loc{1, 1}
	}
	return Loc{line, col}
}

func celType(f pgtype.Family) *cel.Type {
	switch f {
	case pgtype.Int:
		return cel.IntType
	case pgtype.Numeric, pgtype.Float:
		return cel.DoubleType
	case pgtype.Text:
		return cel.StringType
	case pgtype.Bool:
		return cel.BoolType
	case pgtype.Date:
		return DateType
	case pgtype.Timestamp, pgtype.TimestampTZ:
		return cel.TimestampType
	}
	return nil
}

func kindOf(t *types.Type) (Kind, bool) {
	switch {
	case t == nil:
		return 0, false
	case t.IsExactType(types.BoolType):
		return KBool, true
	case t.IsExactType(types.IntType):
		return KInt, true
	case t.IsExactType(types.DoubleType):
		return KDouble, true
	case t.IsExactType(types.StringType):
		return KString, true
	case t.IsExactType(types.TimestampType):
		return KTimestamp, true
	case t.IsExactType(DateType):
		return KDate, true
	}
	return 0, false
}

// screen rejects, before type-checking, what the language does not have, so
// the user reads "not supported" rather than a checker's overload puzzle.
func (c *compiler) screen(e ast.Expr) bool {
	ok := true
	var visit func(e ast.Expr)
	visit = func(e ast.Expr) {
		switch e.Kind() {
		case ast.CallKind:
			call := e.AsCall()
			if !supported[call.FunctionName()] {
				c.errAt(c.loc(e.ID()), "RW204", "supported: "+supportedList,
					"%s is not supported in a window predicate", displayFn(call.FunctionName()))
				ok = false
			}
			if call.IsMemberFunction() {
				visit(call.Target())
			}
			for _, a := range call.Args() {
				visit(a)
			}
		case ast.IdentKind:
			name := e.AsIdent()
			col, known := c.cols[name]
			switch {
			case !known:
				c.errAt(c.loc(e.ID()), "RW202", c.columnHint(name), "unknown column %q", name)
				ok = false
			case celType(col.Type.Family) == nil:
				c.errAt(c.loc(e.ID()), "RW206", "window predicates range over integer, numeric, float, text, varchar, boolean, date and timestamp columns",
					"column %q has type %s, which a predicate cannot compare", name, col.Type.Canonical)
				ok = false
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				visit(el)
			}
		case ast.LiteralKind:
		case ast.SelectKind:
			c.errAt(c.loc(e.ID()), "RW204", "refer to a column by its bare name", "field selection (a.b) is not supported in a window predicate")
			ok = false
		case ast.MapKind, ast.StructKind:
			c.errAt(c.loc(e.ID()), "RW204", "use a list literal with in: x in ['a', 'b']", "maps and messages are not supported in a window predicate")
			ok = false
		default:
			c.errAt(c.loc(e.ID()), "RW204", "supported: "+supportedList, "this construct is not supported in a window predicate")
			ok = false
		}
	}
	visit(e)
	return ok
}

func (c *compiler) columnHint(name string) string {
	var names []string
	for n, col := range c.cols {
		if celType(col.Type.Family) != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	best := diag.Closest(name, names)
	if best != "" {
		return fmt.Sprintf("did you mean %q? predicate variables are the table's columns: %s", best, strings.Join(names, ", "))
	}
	return "predicate variables are the table's columns: " + strings.Join(names, ", ")
}

func displayFn(name string) string {
	if strings.HasPrefix(name, "_") || strings.HasPrefix(name, "@") || strings.HasSuffix(name, "_") {
		return "operator " + strings.Trim(strings.TrimPrefix(name, "@"), "_")
	}
	return "function " + name + "()"
}

var noOverload = regexp.MustCompile(`found no matching overload for '([^']+)' applied to '\((.*)\)'`)

func (c *compiler) checkerIssue(line, col int, msg string) {
	hint := "compare values of the same type: dates with dates or 'YYYY-MM-DD' literals, text with strings, numbers with numbers"
	if m := noOverload.FindStringSubmatch(msg); m != nil {
		types := strings.NewReplacer("google.protobuf.Timestamp", "timestamp", "rwc.date", "date").Replace(m[2])
		msg = fmt.Sprintf("%s cannot be applied to (%s)", displayFn(m[1]), types)
	}
	c.errAt(Loc{line, col}, "RW203", hint, "%s", msg)
}

// Warm pays the language's one-time start-up (CEL's environment and its
// parser's tables: a few milliseconds), so that a caller can have it done
// beside other work before the first predicate it compiles. Nothing is
// cached.
func Warm() {
	date, _ := pgtype.Parse("date")
	_, _ = compileText("d >= date_add(current_date(), -1)", []Column{{Name: "d", Type: date}})
}

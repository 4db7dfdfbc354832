package spec

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/schemas"
)

// Each schema is compiled the first time a file of its kind loads:
// compiling one validates it against its draft's meta-schema (the
// backfill's costs about a third of the pipeline's: 1.7 against 5.6 ms
// in a loaded micro-benchmark), which a project without backfill files
// need not pay for.
var (
	pipelineSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
		return compileSchema("pipeline.schema.json", schemas.Pipeline)
	})
	backfillSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
		return compileSchema("backfill.schema.json", schemas.Backfill)
	})
)

func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schemas/%s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		return nil, err
	}
	return c.Compile(name)
}

// toJSON turns a YAML node into the value the JSON Schema validator reads.
// Scalars keep YAML's own resolution (true is a bool, 7 a number).
func toJSON(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return toJSON(n.Content[0])
	case yaml.AliasNode:
		return toJSON(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = toJSON(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		a := make([]any, len(n.Content))
		for i, c := range n.Content {
			a[i] = toJSON(c)
		}
		return a
	}
	switch n.Tag {
	case "!!bool":
		b, _ := strconv.ParseBool(n.Value)
		return b
	case "!!int", "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	case "!!null":
		return nil
	}
	return n.Value
}

// isTrue reads a boolean scalar as toJSON (and so the JSON Schema) reads
// it: YAML's True and TRUE are true too.
func isTrue(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false
	}
	b, _ := strconv.ParseBool(n.Value)
	return b
}

// validate runs the JSON Schema over doc and turns each failure into a
// positioned diagnostic in rwc's words.
// It also returns the instance paths that failed, so the loader can skip
// just the broken parts.
func validate(sch *jsonschema.Schema, doc *yaml.Node, file string, allowed map[string][]string) (diag.List, [][]string) {
	err := sch.Validate(toJSON(doc))
	if err == nil {
		return nil, nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return diag.List{{Code: "RW101", Severity: diag.Error, Pos: diag.Pos{File: file}, Message: err.Error()}}, [][]string{nil}
	}
	var out diag.List
	var paths [][]string
	seen := map[string]bool{}
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if pn, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			// A bad key. The validator's location for it is unreliable, so
			// find the key by name; report the innermost cause's complaint.
			inner := e
			for len(inner.Causes) > 0 {
				inner = inner.Causes[0]
			}
			e = &jsonschema.ValidationError{SchemaURL: e.SchemaURL, InstanceLocation: keyPath(doc, pn.Property), ErrorKind: inner.ErrorKind}
		}
		if len(e.Causes) == 0 {
			paths = append(paths, e.InstanceLocation)
			d := schemaDiag(e, doc, file, allowed)
			if k := d.String(); !seen[k] {
				seen[k] = true
				out = append(out, d)
			}
			return
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	return out, paths
}

var printer = message.NewPrinter(message.MatchLanguage("en"))

func schemaDiag(e *jsonschema.ValidationError, doc *yaml.Node, file string, allowed map[string][]string) diag.Diagnostic {
	key, val := locate(doc, e.InstanceLocation)
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	where := "this file"
	if len(e.InstanceLocation) > 0 {
		where = strings.Join(e.InstanceLocation, ".")
	}
	isKey := strings.Contains(e.SchemaURL, "propertyNames")
	if isKey {
		val = key
		where = fmt.Sprintf("%q", key.Value)
	}
	d := diag.Diagnostic{Code: "RW101", Severity: diag.Error, Pos: at(val)}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		name := k.Properties[0]
		ctx := objectContext(e.InstanceLocation)
		if kn := keyNode(val, name); kn != nil {
			d.Pos = at(kn)
		}
		d.Code, d.Message = "RW102", fmt.Sprintf("unknown key %q in %s", name, ctx)
		d.Hint = keyHint(name, allowed[ctx])
	case *kind.Required:
		d.Code, d.Pos = "RW103", at(key)
		d.Message = fmt.Sprintf("%s is missing required key %q", where, k.Missing[0])
		d.Hint = requiredHint(k.Missing[0])
		if len(k.Missing) > 1 {
			d.Message = fmt.Sprintf("%s is missing required keys %s", where, strings.Join(k.Missing, ", "))
			d.Hint = "add " + strings.Join(k.Missing, ": …, ") + ": …"
		}
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = jsonWord(w)
		}
		d.Message = fmt.Sprintf("%s must be %s, not %s", where, strings.Join(want, " or "), jsonWord(k.Got))
		d.Hint = "see schemas/pipeline.schema.json for the format, or docs/spec.md"
		if k.Got == "null" {
			d.Hint = "give it a value, or remove the key"
		}
	case *kind.Pattern:
		d.Code = "RW104"
		d.Message = fmt.Sprintf("%q is not a valid name", k.Got)
		d.Hint = "names are lower-case identifiers: a letter or _, then letters, digits or _ (at most 63)"
		if k.Want == "^[1-9][0-9]*d$" {
			d.Code, d.Message, d.Hint = "RW101", fmt.Sprintf("batch %q is not a number of days", k.Got), "write batch: 7d"
		}
	case *kind.MaxLength:
		d.Code = "RW104"
		d.Message = fmt.Sprintf("%s is longer than PostgreSQL's 63-byte identifier limit", where)
		if !isKey {
			d.Message = fmt.Sprintf("%q is longer than PostgreSQL's 63-byte identifier limit", val.Value)
		}
		d.Hint = "shorten the name"
	case *kind.MinLength:
		d.Message = fmt.Sprintf("%s must not be empty", where)
	case *kind.MinProperties:
		d.Message = fmt.Sprintf("%s must have at least one entry", where)
	default:
		d.Message = fmt.Sprintf("%s: %s", where, e.ErrorKind.LocalizedString(printer))
	}
	return d
}

func jsonWord(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "string":
		return "a string"
	case "boolean":
		return "true or false"
	case "number", "integer":
		return "a number"
	case "null":
		return "empty"
	}
	return t
}

// keyPath finds the path of the first mapping key named name.
func keyPath(doc *yaml.Node, name string) []string {
	var walk func(n *yaml.Node, path []string) []string
	walk = func(n *yaml.Node, path []string) []string {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p := walk(c, path); p != nil {
					return p
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				sub := append(append([]string(nil), path...), k)
				if k == name {
					return sub
				}
				if p := walk(n.Content[i+1], sub); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return walk(doc, nil)
}

// objectContext names the kind of object at a path, for messages and for
// the allowed-keys table.
func objectContext(path []string) string {
	switch {
	case len(path) == 0:
		return "top level"
	case len(path) == 2 && path[0] == "tables":
		return "table"
	case len(path) == 3 && path[2] == "properties":
		return "properties"
	case len(path) == 4 && path[2] == "indexes":
		return "index"
	case len(path) == 3 && path[2] == "partitioning":
		return "partitioning"
	case len(path) == 4 && path[2] == "expect":
		return "expectation"
	case len(path) == 5 && path[2] == "expect" && (path[4] == "rows" || path[4] == "relationships"):
		return path[4]
	}
	return strings.Join(path, ".")
}

func keyHint(name string, allowed []string) string {
	if len(allowed) == 0 {
		return "remove it"
	}
	sorted := append([]string(nil), allowed...)
	sort.Strings(sorted)
	if best := diag.Closest(name, sorted); best != "" {
		return fmt.Sprintf("did you mean %q? allowed keys: %s", best, strings.Join(sorted, ", "))
	}
	return "allowed keys: " + strings.Join(sorted, ", ")
}

func requiredHint(key string) string {
	switch key {
	case "replace_where":
		return "add the window predicate, e.g. replace_where: date >= date_add(current_date(), -7)"
	case "columns":
		return "declare the target's columns in order, e.g. columns: {date: date, qty: integer}"
	case "query":
		return "add the source SELECT, e.g. query: SELECT date, qty FROM orders"
	case "reason":
		return "say why this backfill runs; it shows in the audit log"
	}
	return "add " + key + ":"
}

// locate finds the key and value nodes at a JSON pointer path.
func locate(doc *yaml.Node, path []string) (key, val *yaml.Node) {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	key = n
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			k := keyNode(n, p)
			if k == nil {
				return key, n
			}
			key, n = k, valueOf(n, k)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(n.Content) {
				return key, n
			}
			n = n.Content[i]
		default:
			return key, n
		}
	}
	return key, n
}

func keyNode(m *yaml.Node, name string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i]
		}
	}
	return nil
}

func valueOf(m, k *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i] == k {
			return m.Content[i+1]
		}
	}
	return nil
}

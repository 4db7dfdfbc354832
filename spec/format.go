package spec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Key orders of the canonical format (rwc fmt): docs/spec.md's. A key not
// listed (which lint reports) keeps its place after the listed ones.
var (
	pipelineKeys = []string{"pipeline", "schema", "tables"}
	tableKeys    = []string{"replace_where", "partition_by", "properties", "columns", "primary_key", "indexes", "query", "capture", "maintain", "expect"}
	indexKeys    = []string{"columns", "unique", "using", "where"}
	backfillKeys = []string{"backfill", "where", "reason", "batch", "allow_loss"}
)

// Format is src, a pipeline spec (backfill false) or a backfill file, in
// rwc's canonical format: keys in docs/spec.md's order, 2-space indents,
// comments kept; scalars (predicates, queries and the comments inside
// them) keep their values and styles. It never changes what the file
// means, and Format of its output is that output. A file that is not one
// YAML document of a mapping (syntax errors, aliases, several documents)
// is an error: rwc lint says what is wrong with it.
func Format(src []byte, backfill bool) ([]byte, error) {
	if !utf8.Valid(src) || bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		return nil, errors.New("not UTF-8, or with a byte order mark: rwc fmt formats UTF-8 files without one (rwc lint says what is wrong)")
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not valid YAML (rwc lint says where): %v", err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		return nil, errors.New("more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	if hasAlias(&doc) {
		return nil, errors.New("uses YAML aliases, which specs may not")
	}
	root := doc.Content[0]
	folded(root)
	// The comment above the file's first key is the file's (the
	// yaml-language-server line, a description): it stays on top.
	top := ""
	if len(root.Content) > 0 {
		top, root.Content[0].HeadComment = root.Content[0].HeadComment, ""
	}
	if backfill {
		order(root, backfillKeys)
	} else {
		order(root, pipelineKeys)
		if tables := value(root, "tables"); tables != nil && tables.Kind == yaml.MappingNode {
			for i := 1; i < len(tables.Content); i += 2 {
				t := tables.Content[i]
				if t.Kind != yaml.MappingNode {
					continue
				}
				order(t, tableKeys)
				if ix := value(t, "indexes"); ix != nil && ix.Kind == yaml.SequenceNode {
					for _, el := range ix.Content {
						if el.Kind == yaml.MappingNode {
							order(el, indexKeys)
						}
					}
				}
			}
		}
	}
	if top != "" && len(root.Content) > 0 {
		first := root.Content[0]
		first.HeadComment = strings.TrimSuffix(top+"\n"+first.HeadComment, "\n")
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	// The proof that nothing changed: the output means what src meant,
	// value for value (key order aside, which no spec reads).
	for _, b := range [][]byte{blankLinesBetweenTables(out.Bytes(), backfill), out.Bytes()} {
		if same, err := sameYAML(src, b); err == nil && same {
			return b, nil
		}
	}
	return nil, errors.New("rwc fmt cannot format this file without changing what it says: leave it as it is")
}

// sameYAML says whether a and b decode to the same values.
func sameYAML(a, b []byte) (bool, error) {
	var va, vb any
	if err := yaml.Unmarshal(a, &va); err != nil {
		return false, err
	}
	if err := yaml.Unmarshal(b, &vb); err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}

// folded turns folded scalars (>) into literal ones (|) with the same
// value: yaml.v3 folds them again its own way, long lines and stray blank
// lines included.
func folded(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style&yaml.FoldedStyle != 0 {
		n.Style = n.Style&^yaml.FoldedStyle | yaml.LiteralStyle
	}
	for _, c := range n.Content {
		folded(c)
	}
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// order sorts the pairs of mapping m: keys in the order given, then the
// others as they were. The sort is stable, so a duplicate key (which lint
// refuses) keeps its place relative to its twin.
func order(m *yaml.Node, keys []string) {
	rank := map[string]int{}
	for i, k := range keys {
		rank[k] = i
	}
	type pair struct{ k, v *yaml.Node }
	var pairs []pair
	for i := 0; i+1 < len(m.Content); i += 2 {
		pairs = append(pairs, pair{m.Content[i], m.Content[i+1]})
	}
	r := func(p pair) int {
		if n, ok := rank[p.k.Value]; ok {
			return n
		}
		return len(keys)
	}
	// insertion sort: stable, and mappings are small
	for i := 1; i < len(pairs); i++ {
		for j := i; j > 0 && r(pairs[j]) < r(pairs[j-1]); j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
	m.Content = m.Content[:0]
	for _, p := range pairs {
		m.Content = append(m.Content, p.k, p.v)
	}
}

// blankLinesBetweenTables puts one blank line before each table of a
// pipeline after the first (yaml.v3 keeps no blank lines): the canonical
// layout of a file with several flows.
func blankLinesBetweenTables(b []byte, backfill bool) []byte {
	if backfill {
		return b
	}
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	inTables, seen := false, 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "tables:"):
			inTables = true
		case inTables && len(l) > 2 && l[:2] == "  " && l[2] != ' ' && l[2] != '#' && l[2] != '\n':
			seen++
			if seen > 1 {
				// before the table's head comments, if any
				j := out.Len()
				k := i - 1
				s := out.String()
				for k >= 0 && strings.HasPrefix(lines[k], "  #") {
					j -= len(lines[k])
					k--
				}
				out.Reset()
				out.WriteString(s[:j] + "\n" + s[j:])
			}
		case inTables && len(l) > 0 && l[0] != ' ' && l[0] != '#' && l[0] != '\n':
			inTables = false
		}
		out.WriteString(l)
	}
	return []byte(out.String())
}

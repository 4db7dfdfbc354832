package databricks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// One-off predicate overrides (the pipeline updates API's
// replace_where_overrides, or REFRESH STREAMING TABLE … WHERE) become
// backfill files: rwc apply runs each once.

// pendingOverride is one override read, with where its predicate is.
type pendingOverride struct {
	flow   string
	file   *fileImport
	toks   []token // the predicate's tokens in file
	at     int     // the entry's offset in file
	origin string  // what it was, for the backfill's reason
}

// override is one entry of replace_where_overrides.
type override struct {
	FlowName          string `json:"flow_name"`
	PredicateOverride string `json:"predicate_override"`
}

// readOverrides reads a JSON list of overrides, or an update request body
// holding one under replace_where_overrides.
func readOverrides(in Input) ([]pendingOverride, diag.List) {
	f := newFileImport(in.Name, in.Src)
	src := bytes.TrimSpace(in.Src)
	start := bytes.Index(in.Src, src)
	if bytes.HasPrefix(src, []byte("{")) {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(src, &body); err != nil {
			f.ds.Errorf("RW611", f.pos(jsonErrorOffset(err, start)), "write a JSON list of {\"flow_name\": …, \"predicate_override\": …}", "not valid JSON: %v", err)
			return nil, f.ds
		}
		list, ok := body["replace_where_overrides"]
		if !ok {
			f.ds.Errorf("RW611", f.pos(start), "the update request's overrides are under \"replace_where_overrides\"", "no replace_where_overrides in this object")
			return nil, f.ds
		}
		start = bytes.Index(in.Src, list)
		src = list
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		f.ds.Errorf("RW611", f.pos(start), "write a JSON list of {\"flow_name\": …, \"predicate_override\": …}", "replace_where_overrides is not a list")
		return nil, f.ds
	}
	var out []pendingOverride
	for i := 0; dec.More(); i++ {
		off := start + int(dec.InputOffset())
		for off < len(in.Src) && strings.ContainsRune(" \t\r\n,", rune(in.Src[off])) {
			off++
		}
		var raw json.RawMessage
		var o override
		if err := dec.Decode(&raw); err != nil {
			f.ds.Errorf("RW611", f.pos(off), "", "not valid JSON: %v", err)
			return nil, f.ds
		}
		dj := json.NewDecoder(bytes.NewReader(raw))
		dj.DisallowUnknownFields()
		if err := dj.Decode(&o); err != nil || o.FlowName == "" || strings.TrimSpace(o.PredicateOverride) == "" {
			f.ds.Errorf("RW611", f.pos(off), "each override is {\"flow_name\": \"…\", \"predicate_override\": \"…\"}", "override %d is not a flow_name and a predicate_override", i)
			continue
		}
		out = append(out, pendingOverride{flow: o.FlowName, file: f, toks: predicateTokens(raw, off, o.PredicateOverride), at: off,
			origin: fmt.Sprintf("%s: replace_where_overrides[%d]", in.Name, i)})
	}
	return out, f.ds
}

func jsonErrorOffset(err error, base int) int {
	if se, ok := err.(*json.SyntaxError); ok {
		return base + int(se.Offset)
	}
	return base
}

// predicateTokens lexes the predicate, positioned inside the JSON file
// where its string has no escapes (else at the entry).
func predicateTokens(raw []byte, entry int, pred string) []token {
	key := bytes.Index(raw, []byte(`"predicate_override"`))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(pred)
	quoted := bytes.TrimSpace(buf.Bytes())
	val := -1
	if key >= 0 {
		if j := bytes.Index(raw[key:], quoted); j >= 0 && bytes.Equal(quoted[1:len(quoted)-1], []byte(pred)) {
			val = entry + key + j + 1
		}
	}
	toks := lex(pred)
	for i := range toks {
		if val >= 0 {
			toks[i].start += val
			toks[i].end += val
		} else {
			toks[i].start, toks[i].end = entry, entry
		}
	}
	return toks
}

// backfillFiles types each override by its flow's columns, translates it,
// resolves current_date() at opt.At (a backfill file must not depend on
// when it runs) and writes a backfill file.
func backfillFiles(ovs []pendingOverride, flows map[string]*importedFlow, opt Options) ([]File, diag.List) {
	var files []File
	var ds diag.List
	used := map[string]int{}
	for _, o := range ovs {
		f := o.file
		fl, ok := flows[o.flow]
		if !ok {
			var names []string
			for n := range flows {
				names = append(names, n)
			}
			hint := "import the flow's SQL in the same run, or import into the spec directory that has it (--out)"
			if best := diag.Closest(o.flow, names); best != "" {
				hint = fmt.Sprintf("did you mean %q? ", best) + hint
			}
			ds.Errorf("RW611", f.pos(o.at), hint, "override for flow %s, which is not among the imported flows", o.flow)
			continue
		}
		cel, pds := importPredicate(o.toks, fl.types, f.pos)
		ds = append(ds, pds...)
		if pds.HasErrors() {
			continue
		}
		// The file's own diagnostics are reported already; only the
		// override's are new.
		seen := len(f.ds)
		where, ok := resolveOverride(f, o, cel, fl, opt)
		ds = append(ds, f.ds[seen:]...)
		f.ds = f.ds[:seen]
		if !ok {
			continue
		}
		root := &yaml.Node{Kind: yaml.MappingNode}
		pair(root, "backfill", scalar(fl.table))
		root.Content[0].HeadComment = "Imported by rwc import from " + o.origin + "."
		pair(root, "where", scalar(where))
		pair(root, "reason", scalar("imported from "+o.origin))
		day := opt.At.UTC().Format("2006-01-02")
		name := day + "-" + fl.table
		used[name]++
		if n := used[name]; n > 1 {
			name += fmt.Sprintf("-%d", n)
		}
		b, eds := encode(root, name+".yaml", true)
		ds = append(ds, eds...)
		files = append(files, File{Path: spec.BackfillDir + "/" + name + ".yaml", Content: b})
	}
	return files, ds
}

// resolveOverride compiles the override's CEL and, when it reads the
// clock, resolves it at opt.At and says so.
func resolveOverride(f *fileImport, o pendingOverride, cel string, fl *importedFlow, opt Options) (string, bool) {
	at := f.pos(o.at)
	if len(o.toks) > 0 {
		at = f.pos(o.toks[0].start)
	}
	if !f.checkPredicate(cel, fl.columns, at, true) {
		return "", false
	}
	var pcols []predicate.Column
	for name, t := range fl.types {
		pcols = append(pcols, predicate.Column{Name: name, Type: t})
	}
	p, _ := predicate.Compile(cel, pcols)
	switch p.Determinism {
	case predicate.Immutable:
		return cel, true
	case predicate.NonDeterministic:
		f.ds.Errorf("RW612", at, "write fixed bounds: a one-off recompute must be repeatable", "the override %s is not deterministic (rand())", cel)
		return "", false
	}
	rc := predicate.Resolution{Now: opt.At, Zone: opt.Zone}
	r, err := p.Resolve(rc)
	if err != nil {
		f.ds.Errorf("RW612", at, "", "cannot resolve the override at %s: %v", rc.Today(), err)
		return "", false
	}
	spark, err := ExportPredicate(r)
	if err != nil {
		f.ds.Errorf("RW612", at, "", "%v", err)
		return "", false
	}
	fixed, pds := importPredicate(lex(spark), fl.types, func(int) diag.Pos { return at })
	if pds.HasErrors() {
		f.ds = append(f.ds, pds...)
		return "", false
	}
	f.ds.Warnf("RW612", at, "a backfill file runs once, whenever rwc apply runs it: its window is fixed now (rwc import --at DATE fixes another day)",
		"current_date() is resolved at import, %s: the backfill recomputes %s", rc.Today(), fixed)
	return fixed, true
}

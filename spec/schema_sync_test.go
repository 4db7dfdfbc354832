package spec

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/rwc-dev/rwc/schemas"
)

// TestSchemasMatchLoader keeps the JSON Schemas and the loader in step:
// every key the loader reads is in the schema and every key the schema
// allows is read by the loader.
func TestSchemasMatchLoader(t *testing.T) {
	var pipeline, backfill map[string]any
	if err := json.Unmarshal(schemas.Pipeline, &pipeline); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(schemas.Backfill, &backfill); err != nil {
		t.Fatal(err)
	}
	table := dig(t, pipeline, "$defs", "table")
	for _, c := range []struct {
		name   string
		schema map[string]any
		keys   []string
	}{
		{"pipeline", pipeline, PipelineKeys},
		{"table", table, TableKeys},
		{"properties", dig(t, table, "properties", "properties"), PropertyKeys},
		{"index", dig(t, pipeline, "$defs", "index"), IndexKeys},
		{"partitioning", dig(t, pipeline, "$defs", "partitioning"), PartitioningKeys},
		{"distribution", distributionObject(t, pipeline), DistributionKeys},
		{"expectation", dig(t, pipeline, "$defs", "expectation"), ExpectationKeys},
		{"rows", dig(t, pipeline, "$defs", "rows"), RowsKeys},
		{"relationships", dig(t, pipeline, "$defs", "relationships"), RelationshipKeys},
		{"backfill", backfill, BackfillKeys},
	} {
		if c.schema["additionalProperties"] != false {
			t.Errorf("%s: the schema must forbid unknown keys (additionalProperties: false)", c.name)
		}
		props := dig(t, c.schema, "properties")
		var inSchema []string
		for k := range props {
			inSchema = append(inSchema, k)
		}
		sort.Strings(inSchema)
		loader := append([]string(nil), c.keys...)
		sort.Strings(loader)
		if len(inSchema) != len(loader) {
			t.Errorf("%s: schema keys %v, loader keys %v", c.name, inSchema, loader)
			continue
		}
		for i := range loader {
			if inSchema[i] != loader[i] {
				t.Errorf("%s: schema keys %v, loader keys %v", c.name, inSchema, loader)
				break
			}
		}
	}
}

func dig(t *testing.T, m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("schema has no %v", path)
		}
		m = next
	}
	return m
}

// distributionObject is distribution:'s object alternative (the other is
// the string "reference").
func distributionObject(t *testing.T, pipeline map[string]any) map[string]any {
	t.Helper()
	alts, _ := dig(t, pipeline, "$defs", "distribution")["oneOf"].([]any)
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok && m["type"] == "object" {
			return m
		}
	}
	t.Fatal("distribution: no object alternative in the schema")
	return nil
}

// Package schemas holds the JSON Schemas of rwc's file formats. They are the
// first validation pass of the spec loader and give editors completion.
package schemas

import _ "embed"

//go:embed pipeline.schema.json
var Pipeline []byte

//go:embed backfill.schema.json
var Backfill []byte

//go:embed plan.schema.json
var Plan []byte

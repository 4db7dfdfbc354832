// Package spec loads rwc's YAML files into a typed model in which every value
// keeps its file, line and column.
package spec

import (
	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

// Project is everything under a specs directory.
type Project struct {
	Dir       string
	Pipelines []*Pipeline
	Backfills []*Backfill
	// Sources holds each loaded file's lines by display name, for
	// suppression comments and for showing context.
	Sources map[string][]string
}

// Pipeline is one pipelines/*.yaml file.
type Pipeline struct {
	File   string
	Name   string
	Schema string // "public" when not given
	Pos    diag.Pos
	Tables []*Table
}

// Table is a target table and the REPLACE WHERE flow that keeps it.
type Table struct {
	Pipeline     *Pipeline
	Name         string
	Pos          diag.Pos // of the table's key
	ReplaceWhere Text
	PartitionBy  string
	PartitionPos diag.Pos
	ResetAllowed bool
	Columns      []Column
	Query        Text
	// Indexes are the declared indexes; IndexesDeclared says the key is
	// there, so that `indexes: []` opts out of the default index on the
	// partition column while a table without the key gets it.
	Indexes         []Index
	IndexesDeclared bool
	IndexesPos      diag.Pos
	// PrimaryKey is primary_key's columns (nil: none).
	PrimaryKey *Key
	// Partitioning makes the target a partitioned table (nil: a plain one).
	Partitioning *Partitioning
	// Distribution makes the target a Citus table (nil: a local one).
	Distribution *Distribution
	// Expect are the table's expectations, in the order written.
	Expect []*Expectation
	// Capture is how a refresh learns what changed: CaptureFingerprints
	// (the default) or CaptureTriggers.
	Capture    string
	CapturePos diag.Pos
	// Maintain is when the target is brought up to date: MaintainApply
	// (the default: by rwc apply) or MaintainImmediate.
	Maintain    string
	MaintainPos diag.Pos
}

// The capture: values. Fingerprints probe the window of every source at
// each refresh; triggers (statement-level, on the sources and the target)
// log which tables changed, so that a refresh with nothing to do skips
// the probes.
const (
	CaptureFingerprints = "fingerprints"
	CaptureTriggers     = "triggers"
)

// The maintain: values. apply: the target changes only when rwc apply
// (or refresh) runs. immediate: rwc's triggers on the sources also bring
// the window up to date inside each writer's transaction, so that the
// target never lags its sources between applies.
const (
	MaintainApply     = "apply"
	MaintainImmediate = "immediate"
)

// Partitioning is partitioning: range partitions of the target on a date
// column, one per interval.
type Partitioning struct {
	By          string
	ByPos       diag.Pos
	Interval    string // day, week, month or year
	IntervalPos diag.Pos
	Pos         diag.Pos // of the key
}

// Distribution is distribution: a target that Citus distributes by a
// column (By), co-located with another table (ColocateWith, "": as Citus
// chooses), or, Reference, copies to every node.
type Distribution struct {
	By           string
	ByPos        diag.Pos
	ColocateWith string
	ColocatePos  diag.Pos
	Reference    bool
	Pos          diag.Pos // of the key
}

// DistributionReference is distribution:'s value for a reference table.
const DistributionReference = "reference"

// Index is one entry of indexes:.
type Index struct {
	Key
	Unique bool
	Using  string // btree, brin, hash or gin; "" when not given (btree)
	// Where is the partial index's predicate, in CEL ("" Value: none).
	Where Text
}

// Key is a list of columns with their positions: an index's, or the
// primary key's.
type Key struct {
	Columns   []string
	ColumnPos []diag.Pos
	Pos       diag.Pos // of the entry (an index) or of the value (primary_key)
}

// Column is one declared target column, in declaration order.
type Column struct {
	Name    string
	Type    pgtype.Type
	Pos     diag.Pos // of the name
	TypePos diag.Pos
}

// Backfill is one pipelines/backfills/*.yaml file.
type Backfill struct {
	File      string
	Flow      string
	FlowPos   diag.Pos
	Where     Text
	Reason    string
	BatchDays int // 0: not batched
	BatchPos  diag.Pos
	// AllowLoss lets the backfill delete rows its recompute cannot give
	// back on a reset_allowed: false flow.
	AllowLoss bool
}

// Column returns the named column, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// QualifiedName is schema.table, as rwc names flows in messages.
func (t *Table) QualifiedName() string { return t.Pipeline.Schema + "." + t.Name }

// Keys the loader accepts, per object. The JSON Schemas must list exactly
// these (a test keeps them in sync).
var (
	PipelineKeys = []string{"pipeline", "schema", "tables"}
	TableKeys    = []string{"replace_where", "partition_by", "properties", "columns", "query", "indexes", "primary_key", "partitioning", "distribution", "capture", "maintain", "expect"}
	PropertyKeys = []string{"reset_allowed"}
	IndexKeys    = []string{"columns", "unique", "using", "where"}
	// PartitioningKeys are partitioning:'s.
	PartitioningKeys = []string{"by", "interval"}
	// DistributionKeys are distribution:'s, when it is not "reference".
	DistributionKeys = []string{"by", "colocate_with"}
	BackfillKeys     = []string{"backfill", "where", "reason", "batch", "allow_loss"}
)

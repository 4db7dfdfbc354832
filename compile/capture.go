package compile

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Captured is what a refresh's capture found, comparing its probes with
// the fingerprints the last refresh stored (rwc compares them where it
// probes: rwc apply in the refresh's transaction, rwc plan read-only).
type Captured struct {
	// Forced: why the sources force the whole window ("" none): no
	// fingerprints were stored, or a source fingerprinted whole (a
	// dimension) changed.
	Forced Reason `json:"forced,omitempty"`
	// Changed lists the partition values of the window whose source rows
	// changed since the last refresh, sorted; none: no source changed.
	Changed []string    `json:"changed,omitempty"`
	Target  TargetCheck `json:"target"`
}

// TargetCheck is what the target's probe says of the window: whether
// anyone but rwc changed it since the last refresh.
type TargetCheck int

const (
	TargetNotProbed TargetCheck = iota // no fingerprints stored: nothing to compare
	TargetPending                      // probing, beside the write
	TargetClean
	TargetChanged
)

// Await is what an incremental refresh's write still waits for of the
// target's probe, which runs beside it.
type Await int

const (
	AwaitNothing Await = iota
	// AwaitBeforeWrite: no source changed; only the target can say whether
	// there is anything to write.
	AwaitBeforeWrite
	// AwaitAfterWrite: the changed partitions are written; should the
	// target turn out changed, the whole window is recomputed on top.
	AwaitAfterWrite
	// AwaitReason: the whole window is recomputed whatever the probe finds;
	// it decides only the reason recorded (external DML is the one to
	// report).
	AwaitReason
)

// DecideCapture is the rest of an incremental refresh's decision (d, from
// DecideRefresh), once its capture found what changed: the partitions it
// recomputes, or the whole window and why. rwc apply decides again when
// the target's probe answers (the Await d returned says when), and writes
// the whole window on top should the answer be that the target changed; a
// plan, which probes the target first, decides once.
func (f *Flow) DecideCapture(d Decision, window *predicate.Predicate, c Captured) Decision {
	if d.Action != ActionIncremental {
		return d
	}
	whole := func(r Reason) Decision {
		d.Action, d.Reasons = ActionRecomputeWindow, []Reason{r}
		switch c.Target {
		case TargetPending:
			d.Await = AwaitReason
		case TargetChanged:
			d.Reasons = []Reason{ReasonExternalChange}
		}
		return d
	}
	if c.Forced != "" {
		return whole(c.Forced)
	}
	if len(c.Changed) == 0 {
		switch c.Target {
		case TargetPending:
			d.Await = AwaitBeforeWrite
		case TargetClean:
			d.Unchanged = true
		default:
			d.Action, d.Reasons = ActionRecomputeWindow, []Reason{ReasonExternalChange}
		}
		return d
	}
	narrowed, err := f.Narrow(window, c.Changed)
	if err == nil && f.Partitioned() {
		narrowed, err = f.wholePartitions(window, narrowed, c.Changed)
	}
	if err != nil {
		// A source's partition values are not the target's (another type):
		// the window cannot be mapped onto that source.
		return whole(ReasonCannotPushPredicate)
	}
	switch {
	case c.Target == TargetPending && f.Immediate():
		// Its triggers wrote the target: the partitions they wrote are
		// recomputed too, and only the target's probe names them.
		d.Await = AwaitBeforeWrite
	case c.Target == TargetPending:
		d.Partitions, d.Narrowed, d.Await = c.Changed, narrowed, AwaitAfterWrite
	case c.Target == TargetChanged:
		d.Action, d.Reasons = ActionRecomputeWindow, []Reason{ReasonExternalChange}
	default:
		d.Partitions, d.Narrowed = c.Changed, narrowed
	}
	return d
}

// CaptureWrites is what an incremental refresh (pre, from DecideRefresh)
// writes, in order, given all its capture found, the target's answer
// included (a plan asks for it first): what rwc apply writes, which does
// not wait for the target's probe when sources changed (DecideCapture says
// when it does). It writes the changed partitions first; when the probe
// then finds the target changed outside rwc, it writes the whole window on
// top. The decision returned is the last.
func (f *Flow) CaptureWrites(pre Decision, window, resolved *predicate.Predicate, found Captured, obs Observation) (Decision, []Statements, error) {
	aside := found
	if found.Target != TargetNotProbed {
		aside.Target = TargetPending
	}
	first := f.DecideCapture(pre, window, aside)
	if first.Await == AwaitBeforeWrite {
		first = f.DecideCapture(pre, window, found)
	}
	s, err := f.Writes(first, resolved, false, obs)
	if err != nil || first.Await == AwaitNothing {
		return first, []Statements{s}, err
	}
	final := f.DecideCapture(pre, window, found)
	writes := []Statements{s}
	if first.Narrowed != nil && final.Narrowed == nil {
		whole, err := f.Writes(final, resolved, false, obs)
		if err != nil {
			return final, nil, err
		}
		first, whole := OnTop(s, whole)
		writes = []Statements{first, whole}
	}
	return final, writes, nil
}

// Writes is what a decided refresh writes: where (the override's range,
// the window, or the partitions the capture narrowed it to), and nothing
// when nothing changed.
func (f *Flow) Writes(d Decision, resolved *predicate.Predicate, full bool, obs Observation) (Statements, error) {
	switch {
	case d.Unchanged:
		return Statements{}, nil
	case f.Partitioned() && d.Narrowed != nil:
		return f.partitionedWrites(d, d.Narrowed, resolved, false, !f.TargetDistributed(obs), obs)
	case f.Partitioned():
		return f.partitionedWrites(d, resolved, resolved, full, false, obs)
	case d.Narrowed != nil:
		s, err := f.Statements(d.Narrowed, false, obs)
		// A distributed target's write is fingerprinted after it instead
		// (its rows' xmin are the workers'): RETURNING would ship every
		// row inserted back to the coordinator, to be counted.
		if err == nil && s.Insert != "" && !f.TargetDistributed(obs) {
			one := ""
			if len(d.Partitions) == 1 {
				one = f.valueText(d.Partitions[0])
			}
			s.Insert, s.Counted = f.counted(s.Insert, one)
		}
		return s, err
	}
	return f.Statements(resolved, full, obs)
}

// valueText is partition value v as (column)::text prints it (DateStyle
// ISO), which is how RETURNING would count it; "" when v does not parse.
// A narrowed write of one value selects only that value's rows (Narrow), so
// its command tag counts them.
func (f *Flow) valueText(v string) string {
	switch f.Table.Column(f.PartitionBy).Type.Family {
	case pgtype.Date:
		if d, err := predicate.ParseDate(v); err == nil {
			return d.String()
		}
	case pgtype.Int:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	default:
		if utf8.ValidString(v) {
			return v
		}
	}
	return ""
}

// Counted is how an incremental write's INSERT counts the rows it inserts
// per partition value (as text), which the refresh stores to recognise
// them at the next one: PerValue, it returns the counts; Value, its rows
// all hold that value, and its command tag is their count. Neither: it
// does not count them.
type Counted struct {
	PerValue bool
	Value    string
}

// counted makes insert count its rows per partition value: by its command
// tag when they all hold one value (one, as the column prints it),
// otherwise by returning them, grouped; returning 9,000 rows to count them
// costs a third of their insert.
func (f *Flow) counted(insert, one string) (string, Counted) {
	if one != "" {
		return insert, Counted{Value: one}
	}
	if insert == "" {
		return "", Counted{PerValue: true}
	}
	col := pq.QuoteIdentifier(f.PartitionBy)
	return "WITH ins AS (" + insert + "\nRETURNING " + col + ") SELECT (" + col + ")::text, count(*) FROM ins GROUP BY " + col, Counted{PerValue: true}
}

var targetCheckWords = map[TargetCheck]string{TargetNotProbed: "not_probed", TargetPending: "pending", TargetClean: "clean", TargetChanged: "changed"}

var awaitWords = map[Await]string{AwaitNothing: "nothing", AwaitBeforeWrite: "before_write", AwaitAfterWrite: "after_write", AwaitReason: "reason"}

func (t TargetCheck) String() string { return targetCheckWords[t] }
func (a Await) String() string       { return awaitWords[a] }

func (t TargetCheck) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (a Await) MarshalText() ([]byte, error)       { return []byte(a.String()), nil }

func (t *TargetCheck) UnmarshalText(b []byte) error {
	for k, w := range targetCheckWords {
		if w == string(b) {
			*t = k
			return nil
		}
	}
	return fmt.Errorf("unknown target check %q", b)
}

package compile

import "fmt"

// BackfillStatus is where a backfill file stands in the ledger.
type BackfillStatus int

const (
	BackfillPending BackfillStatus = iota // never started: apply runs it
	BackfillPartial                       // started, some batches left: apply resumes it
	BackfillApplied                       // every batch committed
	BackfillChanged                       // applied or started with other content: apply refuses it
)

var backfillWords = [...]string{"pending", "partial", "applied", "changed"}

func (s BackfillStatus) String() string { return backfillWords[s] }

// Runs reports whether rwc apply runs (or resumes) a file in status s.
func (s BackfillStatus) Runs() bool { return s == BackfillPending || s == BackfillPartial }

// MarshalText writes the plan's word for s.
func (s BackfillStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a saved plan's word back.
func (s *BackfillStatus) UnmarshalText(b []byte) error {
	for k, w := range backfillWords {
		if w == string(b) {
			*s = BackfillStatus(k)
			return nil
		}
	}
	return fmt.Errorf("unknown backfill status %q", b)
}

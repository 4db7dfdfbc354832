package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lib/pq"
)

// An interrupt is the caller's context ending while rwc works (rwc's
// SIGINT or SIGTERM). lib/pq then has the server cancel the running
// statement, the transaction rolls back, and the session holding the
// flow's lock ends (DISCARD ALL cannot run on it), which releases the lock:
// nothing waits for the statement to finish, and the next run finds the
// flow free.

// stopped is a refresh rolled back by an interrupt.
type stopped struct {
	what string // "the refresh of flow x"
}

func (s *stopped) Error() string {
	return "interrupted: " + s.what + " was cancelled on the server and rolled back (the target is unchanged), and the flow's lock released"
}

// stoppedBy is err as an interrupt's, when ctx ended (err otherwise).
func stoppedBy(ctx context.Context, what string, err error) error {
	var s *stopped
	if err == nil || ctx.Err() == nil || errors.As(err, &s) {
		return err
	}
	return &stopped{what: what}
}

// Interrupted is a run of refreshes that an interrupt ended: what it had
// committed, what it rolled back, what it had not started, and what the
// next run does.
type Interrupted struct {
	// RolledBack is the refresh that was running ("": none was).
	RolledBack string
	Committed  []string
	NotStarted []string
	Next       string
}

func (e *Interrupted) Error() string {
	var b strings.Builder
	b.WriteString("interrupted")
	if e.RolledBack != "" {
		fmt.Fprintf(&b, ": %s was cancelled on the server and rolled back (its target is unchanged), and the flow's lock released", e.RolledBack)
	}
	committed := "nothing"
	if len(e.Committed) > 0 {
		committed = strings.Join(e.Committed, "; ")
	}
	fmt.Fprintf(&b, "\ncommitted before the interrupt, and kept: %s", committed)
	if len(e.NotStarted) > 0 {
		fmt.Fprintf(&b, "\nnot started: %s", strings.Join(e.NotStarted, ", "))
	}
	if e.Next != "" {
		fmt.Fprintf(&b, "\n%s", e.Next)
	}
	return b.String()
}

// Tally keeps what a run committed, in order, for the account of an
// interrupt.
type Tally struct {
	committed []string
	jobs      map[string]*jobTally
}

type jobTally struct {
	at           int // index in committed
	first, total int
}

// Refreshed counts a refresh that committed (res.Err nil).
func (t *Tally) Refreshed(res Result) {
	if res.Err == nil {
		t.committed = append(t.committed, fmt.Sprintf("the refresh of flow %s (%s)", res.Flow, res.Action))
	}
}

// Batch counts a committed batch of the batched job label ("backfill
// pipelines/backfills/x.yaml (flow y)").
func (t *Tally) Batch(label string, batch, total int) {
	if t.jobs == nil {
		t.jobs = map[string]*jobTally{}
	}
	j, ok := t.jobs[label]
	if !ok {
		j = &jobTally{at: len(t.committed), first: batch, total: total}
		t.jobs[label] = j
		t.committed = append(t.committed, "")
	}
	span := fmt.Sprintf("batch %d", batch)
	if batch != j.first {
		span = fmt.Sprintf("batches %d-%d", j.first, batch)
	}
	t.committed[j.at] = fmt.Sprintf("%s: %s of %d", label, span, total)
}

// Interrupted is the account of an interrupt that ended ctx while err
// came (nil when ctx did not end): notStarted, what the run had left to
// do, next, what running it again does.
func (t *Tally) Interrupted(ctx context.Context, err error, notStarted []string, next string) error {
	if ctx.Err() == nil {
		return nil
	}
	e := &Interrupted{Committed: t.committed, NotStarted: notStarted, Next: next}
	var s *stopped
	if errors.As(err, &s) {
		e.RolledBack = s.what
	}
	return e
}

// jobLabel names a backfill file's job in an account.
func jobLabel(j *BackfillJob) string {
	return fmt.Sprintf("backfill %s (flow %s)", j.Path, j.Flow.Name())
}

// IsCancelled reports an error of a statement its context cancelled: the
// context's own, or the server's (SQLSTATE 57014, what lib/pq's cancel
// request gives).
func IsCancelled(err error) bool {
	var pe *pq.Error
	return errors.Is(err, context.Canceled) || errors.As(err, &pe) && pe.Code == "57014"
}

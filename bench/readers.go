package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// readerQuery is what a reader of the target asks, over and over: one
// day's rows, through the target's index on date, so that a read that
// takes long is one that waited.
const readerQuery = `SELECT count(*) FROM public.%s WHERE date = current_date - 3`

// readerPause is how long the reader rests between reads.
const readerPause = 5 * time.Millisecond

// subject is one rwc binary refreshing a flow of its own.
type subject struct {
	name, bin, flow, dir, dsn string
	extra                     int // columns added so far (x1, x2, …)
}

// refresh runs `rwc refresh` of the subject's flow with args. The spec
// directory is --specs, not the first argument: the baseline may be an rwc
// from before refresh took DIR, and both read --specs.
func (s *subject) refresh(args ...string) error {
	args = append([]string{"--dsn", s.dsn, "refresh", "--allow-dirty", "--specs", s.dir}, append(args, s.flow)...)
	if out, err := exec.Command(s.bin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", s.bin, args, err, out)
	}
	return nil
}

// addColumn rewrites the subject's spec with one more integer column, which
// the query fills with 1.
func (s *subject) addColumn() error {
	s.extra++
	cols, outs := "", ""
	for i := 1; i <= s.extra; i++ {
		cols += fmt.Sprintf("      x%d: integer\n", i)
		outs += fmt.Sprintf(", 1 AS x%d", i)
	}
	text := strings.Replace(spec, "sales_enriched", s.flow, 1)
	text = strings.Replace(text, "      amount: numeric(12,2)\n", "      amount: numeric(12,2)\n"+cols, 1)
	text = strings.Replace(text, "f.amount\n", "f.amount"+outs+"\n", 1)
	return os.WriteFile(filepath.Join(s.dir, "bench.yaml"), []byte(text), 0o644)
}

// readers is what the readers of a target saw during one refresh.
type readers struct {
	idle, longest time.Duration // the longest read idle, and during the refresh
	reads         int           // reads completed during the refresh
	refresh       time.Duration // the refresh, as a process
	inTx          time.Duration // the refresh, as the event log records it (without commit and VACUUM)
	oldSnapshot   int64         // rows a snapshot older than the refresh read after it
	before        int64         // rows in the target before the refresh
	pages         int64         // the target's pages after the refresh (and its VACUUM)
}

// benchReaders measures, for each binary, what readers of its target go
// through during `rwc refresh --full` and during a refresh that adds a
// column (issue #13): a reader that reads the target over and over on a
// session of its own, its longest read during the refresh against its
// longest read idle; and a REPEATABLE READ reader whose snapshot predates
// the refresh, reading the target once it committed. The binaries take
// turns round by round, each on a flow of its own over the same sources.
func benchReaders(ctx context.Context, db *sql.DB, rounds int, subjects []*subject, setup func(*subject) error) error {
	for _, s := range subjects {
		if err := setup(s); err != nil {
			return err
		}
	}
	kinds := []struct {
		name string
		prep func(*subject) error
		args []string
	}{
		// Each full refresh deletes the history: put it back, untimed,
		// before every round of either kind, so that both binaries'
		// targets hold the same rows in about as many pages.
		{"rwc refresh --full", func(s *subject) error { return restoreHistory(ctx, db, s) }, []string{"--full"}},
		{"rwc refresh, a column added", func(s *subject) error {
			if err := restoreHistory(ctx, db, s); err != nil {
				return err
			}
			return s.addColumn()
		}, nil},
	}
	fmt.Printf("\nreaders of the target during a refresh, median of %d rounds each, one run (reader: %s, on a session of its own, resting %s between reads):\n\n",
		rounds, fmt.Sprintf(readerQuery, "target"), readerPause)
	fmt.Println("| refresh | binary | rwc (process) | refresh (event log) | longest read idle | longest read during it | ÷ idle | reads during it | snapshot from before reads | target's pages after |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
	for _, k := range kinds {
		got := make([][]readers, len(subjects))
		for r := 0; r < rounds; r++ {
			for i := range subjects {
				which := (r + i) % len(subjects) // who goes first alternates
				s := subjects[which]
				if err := k.prep(s); err != nil {
					return err
				}
				m, err := measureReaders(ctx, db, s, k.args)
				if err != nil {
					return err
				}
				got[which] = append(got[which], m)
			}
		}
		for i, s := range subjects {
			fmt.Println(readersRow(k.name, s.name, got[i]))
		}
	}
	return nil
}

// readersRow renders the medians of one binary's rounds.
func readersRow(kind, name string, ms []readers) string {
	var idle, longest, refresh, inTx []time.Duration
	reads, empty := 0, 0
	seen := ""
	for _, m := range ms {
		idle, longest, refresh, inTx = append(idle, m.idle), append(longest, m.longest), append(refresh, m.refresh), append(inTx, m.inTx)
		reads += m.reads
		if m.oldSnapshot == 0 {
			empty++
		}
		seen = fmt.Sprintf("%d of %d rows", m.oldSnapshot, m.before)
	}
	if empty > 0 {
		seen = fmt.Sprintf("**empty** in %d of %d rounds", empty, len(ms))
	} else {
		seen = "the old rows in every round (last: " + seen + ")"
	}
	l, i := median(longest), median(idle)
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %.1f× | %d | %s | %d |", kind, name, median(refresh).Round(time.Millisecond), median(inTx).Round(time.Millisecond),
		i.Round(100*time.Microsecond), l.Round(100*time.Microsecond), float64(l)/float64(i), reads/len(ms), seen, ms[len(ms)-1].pages)
}

// measureReaders runs one refresh with a reader reading the target all
// along and a snapshot taken just before it.
func measureReaders(ctx context.Context, db *sql.DB, s *subject, args []string) (readers, error) {
	var m readers
	q := fmt.Sprintf(readerQuery, s.flow)
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM public."+s.flow).Scan(&m.before); err != nil {
		return m, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return m, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, q); err != nil { // warm
		return m, err
	}
	// Idle: a second of reads.
	if m.idle, _, err = readFor(ctx, conn, q, time.Now().Add(time.Second), nil); err != nil {
		return m, err
	}
	old, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return m, err
	}
	defer old.Rollback()
	if _, err := old.ExecContext(ctx, `SELECT count(*) FROM store_dim`); err != nil { // the snapshot; no lock on the target
		return m, err
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.refresh(args...) }()
	var refreshErr error
	finished := false
	m.longest, m.reads, err = readFor(ctx, conn, q, time.Time{}, func() bool {
		select {
		case refreshErr = <-done:
			finished = true
		default:
		}
		return finished
	})
	if !finished {
		refreshErr = <-done
	}
	m.refresh = time.Since(start)
	if err != nil {
		return m, err
	}
	if refreshErr != nil {
		return m, refreshErr
	}
	if err := old.QueryRowContext(ctx, "SELECT count(*) FROM public."+s.flow).Scan(&m.oldSnapshot); err != nil {
		return m, err
	}
	ev, err := lastEvent(ctx, db, s.flow)
	if err != nil {
		return m, err
	}
	m.inTx = ev.duration
	err = db.QueryRowContext(ctx, `SELECT pg_relation_size($1) / current_setting('block_size')::bigint`, "public."+s.flow).Scan(&m.pages)
	return m, err
}

// readFor reads q until the deadline (idle) or until over says so, and
// returns the longest read and how many completed.
func readFor(ctx context.Context, conn *sql.Conn, q string, deadline time.Time, over func() bool) (time.Duration, int, error) {
	var longest time.Duration
	n := 0
	for {
		if over != nil && over() || over == nil && time.Now().After(deadline) {
			return longest, n, nil
		}
		start := time.Now()
		var c int64
		if err := conn.QueryRowContext(ctx, q).Scan(&c); err != nil {
			return longest, n, err
		}
		longest = max(longest, time.Since(start))
		n++
		// A pause between reads, so that the reader, no longer blocked,
		// does not take a core from the refresh it watches.
		time.Sleep(readerPause)
	}
}

// restoreHistory puts the history a full refresh deleted back into the
// subject's target (the window's rows stay), and vacuums it (untimed), so that every
// round's full refresh deletes as many rows.
func restoreHistory(ctx context.Context, db *sql.DB, s *subject) error {
	_, err := db.ExecContext(ctx, fmt.Sprintf(`DELETE FROM public.%[1]s WHERE date < current_date - 7;
		INSERT INTO public.%[1]s (sale_id, date, store_name, region, amount)
		SELECT sale_id, date, store_name, region, amount FROM hand_enriched WHERE date < current_date - 7`, s.flow))
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "VACUUM ANALYZE public."+s.flow)
	return err
}

package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/run"
)

// rwc events fits 100 columns (it used to take 382 for a backfill's
// event): the long parts (reasons, window, backfill, error) go on lines
// of their own, wrapped, and the numbers stay aligned.
func TestEventsFitWidth(t *testing.T) {
	at := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	window := "event_date >= date('2025-10-01') && event_date <= date('2025-11-14') && region in ['north', 'south', 'east', 'west', 'central']"
	evs := []run.Event{
		{Outcome: run.Outcome{Flow: "page_views", Action: compile.ActionCreate, Reasons: []compile.Reason{compile.ReasonFirstRefresh},
			PredicateCEL: "event_date >= date('2026-01-01')", RowsInserted: 10, StartedAt: at}, DurationMS: 12},
		{Outcome: run.Outcome{Flow: "orders_enriched_by_region", Action: compile.ActionBackfill, Reasons: []compile.Reason{compile.ReasonBackfill},
			PredicateCEL: window, RowsDeleted: 123456, RowsInserted: 123457, StartedAt: at,
			Backfill: &run.BackfillNote{File: "pipelines/backfills/2026-01-10-orders_enriched_by_region.yaml", Batch: 2, Of: 3,
				Reason: "the upstream orders feed was\nreprocessed for Q4 after the currency bug; recompute the whole quarter so the dashboards agree with finance"}},
			DurationMS: 98765},
		{Outcome: run.Outcome{Flow: "page_views", Action: compile.ActionRecomputeWindow, StartedAt: at},
			Error: "ERROR: relation \"events\" does not exist (SQLSTATE 42P01) at pipelines/views.yaml:9:40 while recomputing the window of the flow; nothing was changed"},
	}
	var b bytes.Buffer
	if err := Events(&b, evs, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := len([]rune(line)); n > EventsWidth {
			t.Errorf("line of %d columns, more than %d: %q", n, EventsWidth, line)
		}
	}
	for _, want := range []string{
		"STARTED               FLOW                       ACTION                   DELETED  INSERTED     MS\n",
		"2026-01-10T09:00:00Z  page_views                 create                         0        10     12\n",
		"2026-01-10T09:00:00Z  orders_enriched_by_region  backfill                  123456    123457  98765\n",
		"  backfill: pipelines/backfills/2026-01-10-orders_enriched_by_region.yaml 2/3: the upstream orders\n",
		"2026-01-10T09:00:00Z  page_views                 recompute_window FAILED        0         0      0\n",
		"  error: ERROR: relation \"events\" does not exist",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
}

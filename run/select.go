package run

import (
	"context"
	"database/sql"
	"time"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diff"
)

// Undeployed is compile.Undeployed against the last deployment the
// database records (nothing deployed: every flow is new), for
// Selection.CheckOrder: what rwc apply --select and rwc refresh --select
// refuse to leave out upstream of a selected flow.
func Undeployed(ctx context.Context, db *sql.DB, head *compile.Project, dir string, at time.Time, zone *time.Location) (map[string]string, error) {
	var base *compile.Project
	ok, err := StateExists(ctx, db)
	if err != nil {
		return nil, err
	}
	if ok {
		_, _, specs, err := lastDeployment(ctx, db)
		if err != nil {
			return nil, err
		}
		if specs != nil {
			// Deployed specs that no longer load are as good as none: every
			// flow counts as not deployed.
			if b, ds, err := compile.Load(diff.Snapshot(specs), dir); err == nil && !ds.HasErrors() {
				base = b
			}
		}
	}
	return compile.Undeployed(base, head, diff.Classify(base, head, at, zone)), nil
}

package predicate

import (
	"context"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgtest"
)

func TestQLatency(t *testing.T) {
	db, dsn := pgtest.DB(t)
	t.Log(dsn)
	ctx := context.Background()
	c, _ := db.Conn(ctx)
	defer c.Close()
	c.ExecContext(ctx, "CREATE TABLE x AS SELECT g AS id FROM generate_series(1,300) g")
	for _, q := range []string{"SELECT 1", "SELECT id FROM x WHERE id > 5"} {
		st := time.Now()
		for range 50 {
			rs, err := c.QueryContext(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for rs.Next() {
			}
			rs.Close()
		}
		t.Logf("%s: %v/query", q, time.Since(st)/50)
	}
}

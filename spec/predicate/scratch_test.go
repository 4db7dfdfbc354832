package predicate

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rwc-dev/rwc/run/pgtest"
)

func TestScratch(t *testing.T) {
	db, _ := pgtest.DB(t)
	for _, q := range strings.Split(os.Getenv("Q"), ";;") {
		rows, err := db.Query(q)
		if err != nil {
			t.Logf("%s: %v", q, err)
			continue
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			var s []string
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				s = append(s, strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(v), "\n", " "), "\t", " ")))
			}
			t.Logf("%s => %s", q, strings.Join(s, " | "))
		}
		rows.Close()
	}
}

func fmtAny(v any) string { return strings.TrimSpace(strings.Repeat(" ", 0) + sprint(v)) }

func sprint(v any) string { return fmtSprint(v) }
var fmtSprint = fmt.Sprint

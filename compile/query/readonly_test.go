package query

import (
	"fmt"
	"strings"
	"testing"
)

// Each locking clause is found wherever it is written, and its offset is
// that of its FOR; the FOR of SUBSTRING / OVERLAY and words in comments and
// strings are not clauses.
func TestLocks(t *testing.T) {
	cases := []struct {
		sql  string
		want []string // "CLAUSE@text at the offset"
	}{
		{"SELECT a FROM t", nil},
		{"SELECT a FROM t FOR UPDATE", []string{"FOR UPDATE@FOR UPDATE"}},
		{"SELECT a FROM t for no key update of t nowait", []string{"FOR NO KEY UPDATE@for no key"}},
		{"SELECT a FROM (SELECT a FROM t FOR SHARE) s", []string{"FOR SHARE@FOR SHARE) s"}},
		{"WITH c AS (SELECT a FROM t FOR KEY SHARE SKIP LOCKED) SELECT a FROM c", []string{"FOR KEY SHARE@FOR KEY SHARE SKIP"}},
		{"SELECT a FROM t UNION ALL (SELECT a FROM u FOR UPDATE)", []string{"FOR UPDATE@FOR UPDATE)"}},
		{"SELECT a FROM t WHERE a IN (SELECT a FROM u FOR SHARE) FOR UPDATE",
			[]string{"FOR SHARE@FOR SHARE)", "FOR UPDATE@FOR UPDATE"}},
		{"SELECT substring(s FOR share) AS x FROM t -- FOR UPDATE", nil},
		{"SELECT substring(s FROM 1 FOR share) AS x, 'FOR UPDATE' AS y FROM t FOR SHARE", []string{"FOR SHARE@FOR SHARE"}},
		{"SELECT overlay(s PLACING 'x' FROM 1 FOR update) AS x FROM t", nil},
	}
	for _, c := range cases {
		a, err := Analyze(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		var got []string
		for _, l := range a.Locks {
			if l.Offset < 0 {
				got = append(got, l.Clause+"@?")
				continue
			}
			got = append(got, l.Clause+"@"+c.sql[l.Offset:])
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: locks %q, want %q", c.sql, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: lock %d is %q, want %q…", c.sql, i, got[i], c.want[i])
			}
		}
	}
}

// Calls are every function call, qualified or not, at their name.
func TestCalls(t *testing.T) {
	sql := `WITH c AS (SELECT nextval('s') AS n) SELECT pg_catalog.set_config('a', 'b', true) AS x, "Odd"(1, 2) AS y,
		(SELECT random()) AS z FROM c WHERE my.f() > 0`
	a, err := Analyze(sql)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range a.Calls {
		got = append(got, fmt.Sprintf("%s.%s/%d@%.8s", c.Schema, c.Name, c.Args, sql[c.Offset:]))
	}
	want := []string{".nextval/1@nextval(", "pg_catalog.set_config/3@pg_catal", ".Odd/2@\"Odd\"(1,", ".random/0@random()", "my.f/0@my.f() >"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls\n got %q\nwant %q", got, want)
	}
}

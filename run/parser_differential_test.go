package run

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/compile/query"
	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/run/session"
	"github.com/rwc-dev/rwc/spec"
)

// The server reads every query lint accepts as the one statement lint read,
// whatever the database's standard_conforming_strings: for each query of the
// lint corpus and the query fuzz corpus, the server's reading of the query
// as rwc embeds it is compared with pg_query's. The columns it describes
// must be the ones lint found; when it cannot describe them for want of a
// table, the table it names must be at a place where lint found one; a
// syntax error (which is what more than one statement is, to the extended
// protocol) is never right.
func TestServerReadsWhatLintRead(t *testing.T) {
	queries := corpusQueries(t)
	if len(queries) < 60 {
		t.Fatalf("only %d queries in the corpora", len(queries))
	}
	db, dsn := pgtest.DB(t)
	for _, scs := range []string{"on", "off"} {
		pgtest.Exec(t, db, "ALTER DATABASE "+pq.QuoteIdentifier(dbName(t, db))+" SET standard_conforming_strings = "+scs)
		rwc, err := session.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			if msg := readsAsLint(t, rwc, q, true); msg != "" {
				t.Errorf("standard_conforming_strings = %s on the database: %s\n%s", scs, msg, q.text)
			}
		}
		rwc.Close()
	}
}

// The comparison finds the difference a session with the database's
// standard_conforming_strings = off makes, when rwc does not set it: the
// test above could not fail otherwise.
func TestServerReadsWhatLintReadCanFail(t *testing.T) {
	db, dsn := pgtest.DB(t)
	pgtest.Exec(t, db, "ALTER DATABASE "+pq.QuoteIdentifier(dbName(t, db))+" SET standard_conforming_strings = off")
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	differ := 0
	for _, q := range corpusQueries(t) {
		if readsAsLint(t, raw, q, false) != "" {
			differ++
		}
	}
	t.Logf("%d of %d corpus queries read differently", differ, len(corpusQueries(t)))
	if differ < 5 {
		t.Errorf("a session reading standard_conforming_strings = off read only %d corpus queries differently", differ)
	}
}

type corpusQuery struct {
	where, text string
	a           *query.Analysis
}

// readsAsLint describes q on a session of db, through rwc's path (guarded)
// or through a bare Parse message, and says how the server's reading
// differs from lint's ("" when it does not).
func readsAsLint(t *testing.T, db *sql.DB, q corpusQuery, guarded bool) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var types []*sql.ColumnType
	if guarded {
		var d described
		d, err = describeQuery(ctx, tx, q.a.Body, nil)
		types = d.columns
	} else {
		types, err = describeUnguarded(ctx, tx, q.a.Body)
	}
	var pe *pq.Error
	switch {
	case err == nil:
		return sameColumns(q.a, types)
	case !errors.As(err, &pe):
		t.Fatalf("%s: %v", q.where, err)
	case pe.Code == "42601":
		return "the server reads a syntax error: " + pe.Message
	case pe.Code == "42P01":
		return tableAt(q, pe)
	}
	return "the server raised " + string(pe.Code) + ", which the comparison cannot judge: " + pe.Message
}

func describeUnguarded(ctx context.Context, tx *sql.Tx, text string) ([]*sql.ColumnType, error) {
	st, err := tx.PrepareContext(ctx, "SELECT * FROM (\n"+text+"\n) AS src LIMIT 0")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return rows.ColumnTypes()
}

func sameColumns(a *query.Analysis, types []*sql.ColumnType) string {
	if a.Star != nil {
		return ""
	}
	var lint, server []string
	for _, c := range a.Columns {
		lint = append(lint, c.Name)
	}
	for _, c := range types {
		server = append(server, c.Name())
	}
	if strings.Join(lint, ",") != strings.Join(server, ",") {
		return "lint read the columns " + strings.Join(lint, ",") + ", the server " + strings.Join(server, ",")
	}
	return ""
}

// tableAt checks that the server's missing table is one lint found, where
// lint found it: the server counts characters from 1, in the statement rwc
// wraps around the trimmed query.
func tableAt(q corpusQuery, pe *pq.Error) string {
	pos, err := strconv.Atoi(pe.Position)
	if err != nil {
		return "no position for " + pe.Message
	}
	lead := strings.Index(q.text, q.a.Body)
	trimmed := q.a.Body
	prefix := utf8.RuneCountInString("SELECT * FROM (\n")
	chars := pos - 1 - prefix
	if chars < 0 || chars > utf8.RuneCountInString(trimmed) {
		return "the server's missing table is outside the query: " + pe.Message
	}
	off := lead + len(string([]rune(trimmed)[:chars]))
	for _, r := range q.a.References {
		if r.Offset == off {
			return ""
		}
	}
	return "the server misses a table at byte " + strconv.Itoa(off) + " where lint read none: " + pe.Message
}

// corpusQueries are the queries lint accepts in the lint corpus (every
// flow of compile/testdata/lint) and the query fuzz corpus.
func corpusQueries(t *testing.T) []corpusQuery {
	t.Helper()
	var out []corpusQuery
	dirs, _ := filepath.Glob("../compile/testdata/lint/*")
	for _, dir := range dirs {
		p, _, err := compile.Load(spec.DirFS(dir, spec.Repo{}), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.Flows {
			if f.Query != nil {
				out = append(out, corpusQuery{dir + ": " + f.Name(), f.Table.Query.Value, f.Query})
			}
		}
	}
	files, _ := filepath.Glob("../compile/query/testdata/fuzz/FuzzAnalyze/*")
	for _, file := range files {
		text := fuzzString(t, file)
		if a, err := query.Analyze(text); err == nil {
			out = append(out, corpusQuery{file, text, a})
		}
	}
	return out
}

// fuzzString reads a go test fuzz v1 file holding one string.
func fuzzString(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\nstring(")
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return s
}

func dbName(t *testing.T, db *sql.DB) string {
	t.Helper()
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

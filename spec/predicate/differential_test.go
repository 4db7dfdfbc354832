package predicate

// TestDifferential is the proof behind the design's promise (§3) that every
// accepted predicate gives the same answer evaluated by CEL in Go and by
// PostgreSQL on the same row: it generates random predicates over every
// supported column type and operator, and random rows with NULLs and
// awkward values, and compares Eval with what PostgreSQL selects using the
// rendered SQL, under several server TimeZone settings.
//
// Values stay where both sides represent them exactly: real values are
// float32s, numeric values have at most 12 significant digits or are exact
// float64s (such as 2^53), dates lie in
// 1900..2100 (date_add offsets at most 100000 days), timestamps have
// microsecond precision.
//
// Known, accepted limitation: NaN and ±Infinity in float columns are not
// generated. PostgreSQL orders NaN above every number and makes NaN = NaN
// true; CEL (IEEE 754) makes every comparison with NaN false, so the two
// disagree on such rows.

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the exotic zones below must exist everywhere

	"github.com/rwc-dev/rwc/run/pgtest"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

var (
	diffSeed   = flag.Uint64("diff.seed", 0, "seed for TestDifferential (0: $RWC_DIFF_SEED, else a fixed default)")
	diffRounds = flag.Int("diff.rounds", 6, "TestDifferential rounds (each: one Resolution, diffPreds predicates over all rows)")
)

const (
	defaultDiffSeed = 20260131
	diffRows        = 250 // rows in the table
	diffPreds       = 50  // predicates per round
	nullRate        = 0.15
)

// The table: one column per supported type.
var diffCols = []struct{ name, typ string }{
	{"c_small", "smallint"}, {"c_int", "integer"}, {"c_big", "bigint"},
	{"c_num", "numeric(22,3)"}, {"c_real", "real"}, {"c_dbl", "double precision"},
	{"c_text", "text"}, {"c_vc", "varchar(16)"}, {"c_bool", "boolean"},
	{"c_date", "date"}, {"c_ts", "timestamp"}, {"c_tstz", "timestamptz"},
}

var (
	intCols  = []string{"c_small", "c_int", "c_big"}
	dblCols  = []string{"c_num", "c_real", "c_dbl"}
	strCols  = []string{"c_text", "c_vc"}
	tsCols   = []string{"c_ts", "c_tstz"}
	cmpOps   = []string{"==", "!=", "<", "<=", ">", ">="}
	strFuncs = []string{"startsWith", "endsWith", "contains"}
)

// Session time zones the SQL must be indifferent to ("" is the server's default).
var sessionZones = []string{"", "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/St_Johns"}

func diffColumns(t testing.TB) []Column {
	var cols []Column
	for _, c := range diffCols {
		ty, err := pgtype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, Column{Name: c.name, Type: ty})
	}
	return cols
}

func seedFromEnv(t *testing.T) uint64 {
	if *diffSeed != 0 {
		return *diffSeed
	}
	if s := os.Getenv("RWC_DIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RWC_DIFF_SEED=%q: %v", s, err)
		}
		return n
	}
	return defaultDiffSeed
}

func TestDifferential(t *testing.T) {
	seed := seedFromEnv(t)
	t.Logf("seed %d (rerun with: go test -run TestDifferential ./spec/predicate/ -args -diff.seed=%d, or RWC_DIFF_SEED=%d)", seed, seed, seed)
	start := time.Now()
	db, _ := pgtest.DB(t)
	ctx := context.Background()

	rounds := *diffRounds
	if testing.Short() {
		rounds = min(rounds, 2)
	}
	g := newGen(seed, rounds)
	rows := append(g.edgeRows(), g.rows(diffRows)...)
	collation := createDiffTable(t, db)
	insertDiffRows(t, db, rows)
	checkRoundTrip(t, db, rows)

	// One connection per session TimeZone.
	conns := make([]*sql.Conn, len(sessionZones))
	zones := make([]string, len(sessionZones))
	for i, z := range sessionZones {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		if z != "" {
			if _, err := c.ExecContext(ctx, "SET TimeZone = "+quoteSQL(z)); err != nil {
				t.Fatal(err)
			}
		}
		var tz string
		if err := c.QueryRowContext(ctx, "SHOW TimeZone").Scan(&tz); err != nil {
			t.Fatal(err)
		}
		zones[i] = tz
	}
	t.Logf("text columns collate %s; session time zones %v", collation, zones)

	cols := diffColumns(t)
	var (
		pairs, inWindow, failing, compileFailures, mismatches int
		zoneDayDiffers                                        int
		goTime, pgTime                                        time.Duration
		slowest                                               time.Duration
		slowestSQL                                            string
		features                                              = map[string]int{}
	)
	for round, rc := range g.res {
		utcDay, zoneDay := DateOf(rc.Now.UTC()), DateOf(rc.Now.In(rc.loc()))
		if utcDay != zoneDay {
			zoneDayDiffers++
		}
		t.Logf("round %d: now %s, zone %s: current_date() = %s (UTC date %s)", round, rc.Now.Format(time.RFC3339Nano), rc.loc(), zoneDay, utcDay)
		texts := append([]string{}, edgePredicates...)
		for range diffPreds {
			texts = append(texts, g.predicate())
		}
		for _, text := range texts {
			countFeatures(features, text)
			p, issues := Compile(text, cols)
			if len(issues) > 0 {
				compileFailures++
				t.Errorf("seed %d: generated predicate does not compile: %s\n  %v", seed, text, issues)
				continue
			}
			rp, err := p.Resolve(rc)
			if err != nil {
				t.Errorf("seed %d: Resolve(%s): %v", seed, text, err)
				continue
			}
			where, err := rp.SQL(nil)
			if err != nil {
				t.Errorf("seed %d: SQL(%s): %v", seed, text, err)
				continue
			}
			if strings.Contains(where, "random()") {
				t.Fatalf("generator produced a non-deterministic predicate: %s", text)
			}
			goIn, goFails := map[int64]bool{}, map[int64]bool{}
			t0 := time.Now()
			for i, row := range rows {
				id := int64(i + 1)
				fails, err := p.Violates(row, rc)
				if err != nil {
					t.Fatalf("seed %d: Violates(%s) on row %d: %v\n  row: %s", seed, text, id, err, fmtRow(row))
				}
				if fails {
					goFails[id] = true
					failing++
				}
				a, err := p.Eval(row, rc)
				if err != nil {
					t.Fatalf("seed %d: Eval(%s) on row %d: %v\n  row: %s", seed, text, id, err, fmtRow(row))
				}
				b, err := rp.Eval(row, rc)
				if err != nil {
					t.Fatalf("seed %d: Eval(resolved %s) on row %d: %v\n  row: %s", seed, rp.Text, id, err, fmtRow(row))
				}
				if a != b {
					mismatches++
					t.Errorf("seed %d: predicate and its resolved form disagree on row %d\n  predicate: %s\n  resolved:  %s\n  row: %s\n  Go: %v, resolved Go: %v",
						seed, id, text, rp.Text, fmtRow(row), a, b)
				}
				if a {
					goIn[id] = true
					inWindow++
				}
				pairs++
			}
			goTime += time.Since(t0)
			for zi, c := range conns {
				t0 := time.Now()
				pgIn, err := selectIDs(ctx, c, "SELECT id FROM diff WHERE "+where)
				if d := time.Since(t0); d > slowest {
					slowest, slowestSQL = d, where
				}
				pgTime += time.Since(t0)
				if err != nil {
					t.Fatalf("seed %d: PostgreSQL rejected the SQL of %s\n  SQL: %s\n  %v", seed, text, where, err)
				}
				// As an expectation's check: the rows it fails.
				pgFails, err := selectIDs(ctx, c, "SELECT id FROM diff WHERE "+ViolationSQL(where))
				if err != nil {
					t.Fatalf("seed %d: PostgreSQL rejected the check SQL of %s\n  SQL: %s\n  %v", seed, text, ViolationSQL(where), err)
				}
				for i, row := range rows {
					if id := int64(i + 1); goFails[id] != pgFails[id] {
						mismatches++
						t.Errorf("seed %d, round %d: CHECK MISMATCH on row %d (session TimeZone %s)\n  check: %s\n  SQL:   %s\n  row: %s\n  Go fails it: %v, PostgreSQL: %v",
							seed, round, id, zones[zi], text, ViolationSQL(where), fmtRow(row), goFails[id], pgFails[id])
					}
				}
				for i, row := range rows {
					if id := int64(i + 1); goIn[id] != pgIn[id] {
						mismatches++
						t.Errorf("seed %d, round %d: MISMATCH on row %d (session TimeZone %s)\n  predicate: %s\n  resolved:  %s\n  SQL:       %s\n  row: %s\n  Go: %v, PostgreSQL: %v",
							seed, round, id, zones[zi], text, rp.Text, where, fmtRow(row), goIn[id], pgIn[id])
					}
				}
			}
			if mismatches > 20 {
				t.Fatalf("seed %d: too many mismatches, stopping", seed)
			}
		}
	}
	t.Logf("seed %d: %d (predicate, row) pairs, %d in the window, %d predicates (%d hand-written per round), %d compile failures, %d mismatches, %d/%d rounds with current_date() != UTC date; %s",
		seed, pairs, inWindow, len(g.res)*(diffPreds+len(edgePredicates)), len(edgePredicates), compileFailures, mismatches, zoneDayDiffers, len(g.res), time.Since(start).Round(time.Millisecond))
	t.Logf("time in Eval %s, in PostgreSQL %s (slowest query %s: %s)", goTime.Round(time.Millisecond), pgTime.Round(time.Millisecond), slowest.Round(time.Millisecond), slowestSQL)
	if pairs < 10000 {
		t.Errorf("only %d pairs; want at least 10000", pairs)
	}
	// As checks: the rows false (not NULL) fail; NULL pass.
	if failing < pairs/10 || failing+inWindow >= pairs {
		t.Errorf("%d of %d pairs fail as a check, %d pass as TRUE: the generator makes too few FALSE or too few NULL", failing, pairs, inWindow)
	}
	if inWindow < pairs/10 || inWindow > pairs*9/10 {
		t.Errorf("%d of %d pairs in the window: the generator is lopsided", inWindow, pairs)
	}
	if len(g.res) >= 4 && zoneDayDiffers == 0 {
		t.Errorf("no round had current_date() in its zone differ from the UTC date")
	}
	var missing []string
	for _, f := range featureList {
		if features[f] == 0 {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("generator never produced %q", missing)
	}
}

// edgePredicates run in every round besides the generated ones: the cases
// most likely to split Go from PostgreSQL.
var edgePredicates = []string{
	// ints against doubles compare as doubles in CEL
	`c_big > 9007199254740992.0`, `c_big >= 9223372036854775807.0`, `c_big <= -9223372036854775808.0`,
	`c_big > c_num`, `c_big < c_dbl`, `c_int < c_real`, `c_small >= c_real`, `c_big > c_real`, `16777217 > c_real`,
	// doubles of different widths and exactness
	`c_num < c_real`, `c_num >= c_dbl`, `c_real == 0.1`, `c_real == c_dbl`, `c_num == 0.1`, `c_num != c_real`,
	`c_dbl > 0.30000000000000004`, `c_num > 0.30000000000000004`, `c_dbl == -0.0`, `c_dbl == 10`, `c_num < 1`,
	// text: byte order, quotes, backslashes, empty strings
	`c_text < 'B'`, `c_text < c_vc`, `c_text >= 'é'`, `c_vc <= 'a'`, `'B' > c_vc`, `c_text == 'é'`, `c_text != c_vc`,
	`c_text.startsWith(c_vc)`, `c_vc.endsWith(c_text)`, `c_text.contains('')`, `''.contains(c_text)`,
	`c_text.startsWith("a'")`, `c_text.contains('\\')`, `c_text.endsWith('%')`, `'abc'.startsWith(c_vc)`,
	// dates and the current day in the Resolution's zone
	`c_date == current_date()`, `c_date >= date_add(current_date(), -1)`, `c_date < '2000-02-29'`,
	`'2026-01-31' <= c_date`, `date_sub(c_date, 100000) < date('1700-01-01')`, `date_add(c_date, 1) == current_date()`,
	// timestamps: without time zone is UTC, whatever the session's TimeZone
	`c_ts < current_timestamp()`, `c_ts == c_tstz`, `c_tstz <= c_ts`, `c_ts >= timestamp('2026-01-31T00:00:00+14:00')`,
	`c_tstz == current_timestamp()`, `c_ts <= current_timestamp()`,
	// three-valued logic
	`!c_bool`, `c_bool || c_int > 0`, `!(c_bool && c_text == 'a')`, `c_bool == false || c_date != c_date`,
	`!(c_int > 0 || c_num < 0)`, `c_bool != c_bool`,
}

// featureList is what every run must exercise.
var featureList = []string{
	"==", "!=", "<", "<=", ">", ">=", "&&", "||", "!(", " in [", ".startsWith(", ".endsWith(", ".contains(",
	"date('", "date_add(", "date_sub(", "timestamp('", "current_date()", "current_timestamp()",
	"c_small", "c_int", "c_big", "c_num", "c_real", "c_dbl", "c_text", "c_vc", "c_bool", "c_date", "c_ts", "c_tstz",
}

func countFeatures(m map[string]int, text string) {
	for _, f := range featureList {
		if strings.Contains(text, f) {
			m[f]++
		}
	}
}

func selectIDs(ctx context.Context, c *sql.Conn, q string) (map[int64]bool, error) {
	rs, err := c.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[int64]bool{}
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rs.Err()
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// createDiffTable creates the table. Text columns get a linguistic (ICU)
// collation when the server has one, so that a range comparison missing
// COLLATE "C" orders 'a' < 'B' differently from Go and fails the test; the
// cluster's own default collation is C, which would hide it.
func createDiffTable(t *testing.T, db *sql.DB) string {
	collation := "default"
	for _, c := range []string{"en-x-icu", "und-x-icu", "en_US.utf8"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pg_collation WHERE collname = $1", c).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			collation = c
			break
		}
	}
	var defs []string
	defs = append(defs, "id bigint PRIMARY KEY")
	for _, c := range diffCols {
		d := c.name + " " + c.typ
		if (c.typ == "text" || strings.HasPrefix(c.typ, "varchar")) && collation != "default" {
			d += ` COLLATE "` + collation + `"`
		}
		defs = append(defs, d)
	}
	if _, err := db.Exec("CREATE TABLE diff (" + strings.Join(defs, ", ") + ")"); err != nil {
		t.Fatal(err)
	}
	return collation
}

// sqlText renders a row value as the text PostgreSQL parses back exactly.
func sqlText(col string, v Value) any {
	switch v := v.(type) {
	case nil:
		return nil
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if col == "c_real" {
			return strconv.FormatFloat(v, 'g', -1, 32)
		}
		if col == "c_num" {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case Date:
		return v.String()
	case time.Time:
		if col == "c_ts" {
			return v.UTC().Format("2006-01-02 15:04:05.999999")
		}
		return v.Format("2006-01-02 15:04:05.999999Z07:00")
	}
	panic(fmt.Sprintf("sqlText %T", v))
}

func insertDiffRows(t *testing.T, db *sql.DB, rows []map[string]Value) {
	var (
		tuples []string
		args   []any
	)
	for i, r := range rows {
		ph := []string{strconv.Itoa(i + 1)}
		for _, c := range diffCols {
			args = append(args, sqlText(c.name, r[c.name]))
			ph = append(ph, fmt.Sprintf("$%d::%s", len(args), c.typ))
		}
		tuples = append(tuples, "("+strings.Join(ph, ", ")+")")
	}
	if _, err := db.Exec("INSERT INTO diff VALUES "+strings.Join(tuples, ", "), args...); err != nil {
		t.Fatal(err)
	}
}

// checkRoundTrip reads the rows back to prove the table holds exactly the
// values Eval sees, so a mismatch below is about predicates, not the harness.
func checkRoundTrip(t *testing.T, db *sql.DB, rows []map[string]Value) {
	var sel []string
	for _, c := range diffCols {
		switch c.name {
		case "c_tstz":
			sel = append(sel, "to_char(c_tstz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')")
		case "c_ts":
			sel = append(sel, "to_char(c_ts, 'YYYY-MM-DD HH24:MI:SS.US')")
		default:
			sel = append(sel, c.name+"::text")
		}
	}
	rs, err := db.Query("SELECT id, " + strings.Join(sel, ", ") + " FROM diff ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		var id int64
		vals := make([]sql.NullString, len(diffCols))
		dest := []any{&id}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rs.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := rows[id-1]
		for i, c := range diffCols {
			want, got := row[c.name], vals[i]
			if want == nil || !got.Valid {
				if want != nil || got.Valid {
					t.Fatalf("row %d %s: stored %v, want %v", id, c.name, got, want)
				}
				continue
			}
			ok := false
			switch w := want.(type) {
			case int64:
				ok = got.String == strconv.FormatInt(w, 10)
			case float64:
				bits := 64
				if c.name == "c_real" {
					bits = 32 // real::text is the shortest float4 spelling
				}
				f, err := strconv.ParseFloat(got.String, bits)
				ok = err == nil && f == w
			case string:
				ok = got.String == w
			case bool:
				ok = got.String == strconv.FormatBool(w)
			case Date:
				ok = got.String == w.String()
			case time.Time:
				ok = got.String == w.UTC().Format("2006-01-02 15:04:05.000000")
			}
			if !ok {
				t.Fatalf("row %d %s: PostgreSQL stored %q, Go has %s", id, c.name, got.String, fmtValue(want))
			}
		}
		n++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(rows) {
		t.Fatalf("read back %d rows, inserted %d", n, len(rows))
	}
}

func fmtValue(v Value) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	case Date:
		return "date(" + v.String() + ")"
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

func fmtRow(row map[string]Value) string {
	var parts []string
	for _, c := range diffCols {
		parts = append(parts, c.name+"="+fmtValue(row[c.name]))
	}
	return strings.Join(parts, " ")
}

// gen makes rows and predicates from shared pools of values, so that
// literals often equal, prefix or neighbour the stored values.
type gen struct {
	r      *rand.Rand
	res    []Resolution
	ints   []int64
	dbls   []float64
	reals  []float32
	nums   []string
	strs   []string
	dates  []Date
	stamps []time.Time
}

var diffZones = []string{"UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/St_Johns", "Asia/Kathmandu", "Europe/Berlin", "Australia/Lord_Howe", "America/Los_Angeles"}

func newGen(seed uint64, rounds int) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	r := g.r
	// Resolutions: instants near midnight UTC in half the rounds, so that
	// current_date() in the zone is often not the UTC date.
	for i := range rounds {
		day := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(70*365))
		var off time.Duration
		if i%2 == 0 {
			off = time.Duration(r.Int64N(int64(3*time.Hour))) - 90*time.Minute // 22:30..01:30 UTC
		} else {
			off = time.Duration(r.Int64N(int64(24 * time.Hour)))
		}
		now := day.Add(off).Add(time.Duration(r.IntN(1000))) // nanoseconds: current_timestamp() truncates
		var zone *time.Location
		if i%3 != 2 { // else nil: UTC
			loc, err := time.LoadLocation(diffZones[r.IntN(len(diffZones))])
			if err != nil {
				panic(err)
			}
			zone = loc
		}
		if i == 0 {
			zone, _ = time.LoadLocation("Pacific/Kiritimati") // +14: always a different day from the UTC one near midnight
			now = day.Add(11 * time.Hour)
		}
		g.res = append(g.res, Resolution{Now: now, Zone: zone})
	}

	g.ints = []int64{0, 1, -1, 2, 3, 7, 10, 42, 99, 100, -100, 255, 256, 1000, 32766, 32767, -32768, 65535,
		16777216, 16777217, 2147483647, -2147483648, 2147483648, 1 << 53, 1<<53 + 1, 1<<53 - 1, -(1 << 53) - 1,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64}
	g.reals = []float32{0, float32(math.Copysign(0, -1)), 0.1, 0.25, 0.5, -0.5, 1, 2.5, 10, 42, 100, 0.3,
		16777216, 16777217, 1e-45, math.MaxFloat32, -math.MaxFloat32, 1.5}
	g.dbls = []float64{0, math.Copysign(0, -1), 0.1, 0.25, 0.5, -0.5, 1, 1.5, 2.5, 10, 42, 100, 0.3,
		0.30000000000000004, 1e-300, 5e-324, 1e300, math.MaxFloat64, -math.MaxFloat64, 9007199254740992,
		9007199254740994, 16777216, 16777217, 123456789.123, float64(float32(0.1)), float64(float32(0.3))}
	g.nums = []string{"0", "0.1", "0.25", "-0.5", "1", "1.5", "2.5", "10", "42", "100", "0.001", "-0.001", "0.3",
		"123456789.123", "999999999.999", "-999999999.999", "16777216", "16777217", "32767", "0.125",
		"9007199254740992", "9007199254740994", "-9007199254740992", "4611686018427387904"} // exact float64s
	g.strs = []string{"", "a", "A", "b", "B", "ab", "aB", "Ab", "abc", "abd", "b a", " a", "a ", "é", "e", "E", "É",
		"ée", "eé", "e\u0301", "ß", "ss", "SS", "ǅ", "a'b", "'", "''", "it's", `\`, `a\b`, `\\`, `\'`, `"`, `a"b`,
		"%", "a%", "_", "a_b", "日本", "日本語", "日", "🙂", "a🙂", "\t", "x\ny", "null", "NULL", "z", "Z", "zz",
		"aa", "a\u00a0b", "ÿ", "ā", "$1", "--", "/*", ";", "\u200b"}
	g.dates = []Date{mustDate("1900-01-01"), mustDate("1970-01-01"), mustDate("1999-12-31"), mustDate("2000-02-29"),
		mustDate("2026-01-31"), mustDate("2100-12-31")}
	for _, rc := range g.res {
		for _, d := range []Date{DateOf(rc.Now.UTC()), DateOf(rc.Now.In(rc.loc()))} {
			for _, k := range []Date{0, 0, 1, -1, 7, -7, 30} {
				g.dates = append(g.dates, d+k)
			}
		}
		now := rc.Now.UTC().Truncate(time.Microsecond)
		for _, k := range []time.Duration{0, 0, time.Microsecond, -time.Microsecond, time.Second, -time.Hour, 14 * time.Hour, -11 * time.Hour, 24 * time.Hour} {
			g.stamps = append(g.stamps, now.Add(k))
		}
		g.stamps = append(g.stamps, DateOf(rc.Now.In(rc.loc())).Time())
	}
	for range 10 {
		g.stamps = append(g.stamps, g.randDate().Time())
	}
	return g
}

func mustDate(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func (g *gen) randDate() Date {
	lo, hi := mustDate("1900-01-01"), mustDate("2100-12-31")
	return lo + Date(g.r.Int64N(int64(hi-lo+1)))
}

func (g *gen) randStamp() time.Time {
	lo := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(2100, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
	return time.UnixMicro(lo + g.r.Int64N(hi-lo+1)).UTC()
}

// Row values.

func (g *gen) intIn(lo, hi int64) int64 {
	if g.chance(0.5) {
		for range 10 {
			if v := pick(g, g.ints); v >= lo && v <= hi {
				return v
			}
		}
	}
	if g.chance(0.7) {
		return g.r.Int64N(21) - 10
	}
	span := uint64(hi - lo)
	if span == math.MaxUint64 {
		return int64(g.r.Uint64())
	}
	return lo + int64(g.r.Uint64N(span+1))
}

func (g *gen) randFloat64() float64 {
	for {
		f := math.Float64frombits(g.r.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

func (g *gen) randFloat32() float32 {
	for {
		f := math.Float32frombits(g.r.Uint32())
		if !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
			return f
		}
	}
}

func (g *gen) quarter() float64 { return float64(g.r.IntN(801)-400) / 4 }

func (g *gen) real() float32 {
	switch n := g.r.IntN(10); {
	case n < 4:
		return pick(g, g.reals)
	case n < 8:
		return float32(g.quarter())
	default:
		return g.randFloat32()
	}
}

func (g *gen) dbl() float64 {
	switch n := g.r.IntN(20); {
	case n < 7:
		return pick(g, g.dbls)
	case n < 13:
		return g.quarter()
	case n < 15:
		return g.randFloat64()
	case n < 17:
		return float64(pick(g, g.ints))
	case n < 18:
		return g.numValue()
	default:
		return float64(g.real())
	}
}

func (g *gen) numText() string {
	if g.chance(0.5) {
		return pick(g, g.nums)
	}
	if g.chance(0.3) {
		return strconv.FormatInt(g.r.Int64N(21)-10, 10)
	}
	s := strconv.FormatInt(g.r.Int64N(int64(math.Pow10(g.r.IntN(10)))), 10)
	if d := g.r.IntN(4); d > 0 {
		s += "." + fmt.Sprintf("%0*d", d, g.r.IntN(int(math.Pow10(d))))
	}
	if g.chance(0.3) {
		s = "-" + s
	}
	return s
}

func (g *gen) numValue() float64 {
	f, err := strconv.ParseFloat(g.numText(), 64)
	if err != nil {
		panic(err)
	}
	return f
}

var strPieces = []string{"a", "b", "B", "A", "é", "e\u0301", "'", `\`, "日", "🙂", " ", "z", "Z", "%", "_", "E", "ß", "\""}

func (g *gen) str() string {
	if g.chance(0.55) {
		return pick(g, g.strs)
	}
	var b strings.Builder
	for range g.r.IntN(5) {
		b.WriteString(pick(g, strPieces))
	}
	return b.String()
}

func (g *gen) date() Date {
	if g.chance(0.7) {
		return pick(g, g.dates)
	}
	return g.randDate()
}

func (g *gen) stamp() time.Time {
	if g.chance(0.7) {
		return pick(g, g.stamps)
	}
	return g.randStamp()
}

var inputZones = []int{0, 0, 14 * 3600, -11 * 3600, -(3*3600 + 1800), 5*3600 + 2700, 3600}

func (g *gen) rows(n int) []map[string]Value {
	out := make([]map[string]Value, n)
	for i := range out {
		row := map[string]Value{}
		for _, c := range diffCols {
			if g.chance(nullRate) {
				row[c.name] = nil
				continue
			}
			var v Value
			switch c.name {
			case "c_small":
				v = g.intIn(math.MinInt16, math.MaxInt16)
			case "c_int":
				v = g.intIn(math.MinInt32, math.MaxInt32)
			case "c_big":
				v = g.intIn(math.MinInt64, math.MaxInt64)
			case "c_num":
				v = g.numValue()
			case "c_real":
				v = float64(g.real())
			case "c_dbl":
				v = g.dbl()
			case "c_text":
				v = g.str()
			case "c_vc":
				s := []rune(g.str())
				v = string(s[:min(len(s), 16)])
			case "c_bool":
				v = g.chance(0.5)
			case "c_date":
				v = g.date()
			case "c_ts":
				v = g.stamp()
			case "c_tstz":
				// Stored from text with an offset: PostgreSQL must convert it.
				v = g.stamp().In(time.FixedZone("", pick(g, inputZones)))
			}
			row[c.name] = v
		}
		out[i] = row
	}
	return out
}

// edgeRows are hand-made rows that put the awkward values side by side.
func (g *gen) edgeRows() []map[string]Value {
	rc := g.res[0]
	now := rc.Now.UTC().Truncate(time.Microsecond)
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(err)
		}
		return f
	}
	rows := []map[string]Value{
		{}, // all NULL
		{"c_small": int64(0), "c_int": int64(16777217), "c_big": int64(1<<53 + 1), "c_num": num("9007199254740992"),
			"c_real": float64(float32(16777216)), "c_dbl": float64(1 << 53), "c_text": "a", "c_vc": "B", "c_bool": true,
			"c_date": DateOf(rc.Now.In(rc.loc())), "c_ts": now, "c_tstz": now},
		{"c_small": int64(32767), "c_int": int64(math.MaxInt32), "c_big": int64(math.MaxInt64), "c_num": num("0.1"),
			"c_real": float64(float32(0.1)), "c_dbl": 0.1, "c_text": "é", "c_vc": "e", "c_bool": false,
			"c_date": DateOf(rc.Now.UTC()), "c_ts": now.Add(14 * time.Hour), "c_tstz": now.Add(-time.Microsecond)},
		{"c_small": int64(math.MinInt16), "c_int": int64(math.MinInt32), "c_big": int64(math.MinInt64), "c_num": num("-0.001"),
			"c_real": math.Copysign(0, -1), "c_dbl": math.Copysign(0, -1), "c_text": "", "c_vc": "",
			"c_date": DateOf(rc.Now.In(rc.loc())) + 1, "c_ts": now.Add(time.Microsecond), "c_tstz": now},
		{"c_big": int64(1 << 53), "c_num": num("9007199254740994"), "c_dbl": float64(1<<53 + 2), "c_text": "a'b\\c", "c_vc": "a'b",
			"c_real": float64(float32(0.3)), "c_date": mustDate("2000-02-29"), "c_ts": mustDate("2026-01-30").Time().Add(10 * time.Hour)},
	}
	for _, r := range rows {
		for _, c := range diffCols {
			if _, ok := r[c.name]; !ok {
				r[c.name] = nil
			}
		}
	}
	return rows
}

// Predicate text.

func (g *gen) predicate() string {
	for {
		s := g.boolExpr(g.r.IntN(4))
		if strings.Contains(s, "c_") { // at least one column, or the test is vacuous
			return s
		}
	}
}

func (g *gen) boolExpr(depth int) string {
	if depth == 0 || g.chance(0.25) {
		return g.atom()
	}
	switch g.r.IntN(5) {
	case 0, 1:
		return "(" + g.boolExpr(depth-1) + " && " + g.boolExpr(depth-1) + ")"
	case 2, 3:
		return "(" + g.boolExpr(depth-1) + " || " + g.boolExpr(depth-1) + ")"
	default:
		return "!(" + g.boolExpr(depth-1) + ")"
	}
}

func (g *gen) atom() string {
	switch n := g.r.IntN(100); {
	case n < 18:
		return g.numCompare()
	case n < 28:
		return g.strCompare()
	case n < 40:
		return g.strFunc()
	case n < 46:
		return g.boolAtom()
	case n < 64:
		return g.dateCompare()
	case n < 78:
		return g.tsCompare()
	case n < 98:
		return g.inAtom()
	default:
		return pick(g, []string{"true", "false"})
	}
}

func (g *gen) op() string { return pick(g, cmpOps) }

// numTerm is an int or double column or literal, with its CEL kind.
func (g *gen) numTerm() (text string, isLit, isInt bool) {
	if g.chance(0.6) {
		if g.chance(0.5) {
			return pick(g, intCols), false, true
		}
		return pick(g, dblCols), false, false
	}
	if g.chance(0.5) {
		return g.intLit(), true, true
	}
	return g.dblLit(), true, false
}

func (g *gen) numCompare() string {
	a, al, ai := g.numTerm()
	b, bl, bi := g.numTerm()
	if al && bl && g.chance(0.9) {
		b, bl, bi = pick(g, intCols), false, true
		if g.chance(0.5) {
			b, bi = pick(g, dblCols), false
		}
	}
	// An int literal next to a double column is a double literal.
	if ai && al && !bl && !bi {
		ai = false
	}
	if bi && bl && !al && !ai {
		bi = false
	}
	op := g.op()
	// CEL orders an int against a double but has no == or != between them:
	// c_int == 2.5 is a compile error (RW203), so it is not generated.
	for ai != bi && (op == "==" || op == "!=") {
		op = g.op()
	}
	return a + " " + op + " " + b
}

func (g *gen) intLit() string {
	var v int64
	switch n := g.r.IntN(10); {
	case n < 5:
		v = pick(g, g.ints)
	case n < 8:
		v = g.r.Int64N(21) - 10
	default:
		v = int64(g.quarter())
	}
	if v > 0 && v < 1<<20 && g.chance(0.1) {
		return "0x" + strconv.FormatInt(v, 16)
	}
	return strconv.FormatInt(v, 10)
}

func (g *gen) dblLit() string {
	var v float64
	switch n := g.r.IntN(10); {
	case n < 5:
		v = g.dbl()
	case n < 7:
		v = float64(g.real())
	default:
		v = g.numValue()
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if g.chance(0.3) && math.Abs(v) < 1e15 {
		s = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// celString writes s as a CEL string literal in one of its spellings.
func (g *gen) celString(s string) string {
	quote := `"`
	if g.chance(0.5) {
		quote = `'`
	}
	if !strings.ContainsAny(s, "'\"\\\n\t") && g.chance(0.2) {
		return "r" + quote + s + quote // raw string
	}
	var b strings.Builder
	b.WriteString(quote)
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case string(c) == quote:
			b.WriteString(`\` + quote)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c > 0x7f && g.chance(0.3):
			if c > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, c)
			} else {
				fmt.Fprintf(&b, `\u%04x`, c)
			}
		case c < 0x20:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(quote)
	return b.String()
}

func (g *gen) strLit() string { return g.celString(g.strNear()) }

// strNear is a pool string or a piece of one, so that prefixes, suffixes and
// substrings of stored values come up.
func (g *gen) strNear() string {
	s := g.str()
	rs := []rune(s)
	if len(rs) > 1 && g.chance(0.3) {
		i := g.r.IntN(len(rs))
		j := i + g.r.IntN(len(rs)-i+1)
		return string(rs[i:j])
	}
	return s
}

func (g *gen) strTerm() (string, bool) {
	if g.chance(0.6) {
		return pick(g, strCols), false
	}
	return g.strLit(), true
}

func (g *gen) strCompare() string {
	a, al := g.strTerm()
	b, bl := g.strTerm()
	if al && bl {
		b = pick(g, strCols)
	}
	return a + " " + g.op() + " " + b
}

func (g *gen) strFunc() string {
	recv := pick(g, strCols)
	if g.chance(0.2) {
		recv = g.strLit()
	}
	arg := g.strLit()
	if g.chance(0.35) || strings.HasPrefix(recv, "'") || strings.HasPrefix(recv, `"`) || strings.HasPrefix(recv, "r") {
		if g.chance(0.8) || !strings.HasPrefix(recv, "c_") {
			arg = pick(g, strCols)
		}
	}
	return recv + "." + pick(g, strFuncs) + "(" + arg + ")"
}

func (g *gen) boolLit() string { return pick(g, []string{"true", "false"}) }

func (g *gen) boolAtom() string {
	switch g.r.IntN(6) {
	case 0:
		return "c_bool"
	case 1:
		return "!c_bool"
	case 2:
		return "c_bool " + g.op() + " " + g.boolLit()
	case 3:
		return g.boolLit() + " " + g.op() + " c_bool"
	case 4:
		return "c_bool " + g.op() + " c_bool"
	default:
		return "c_bool in [" + g.boolLit() + "]"
	}
}

var dateOffsets = []int64{0, 1, -1, 7, -7, 30, -30, 365, -365, 100000, -100000}

func (g *gen) offset() string {
	if g.chance(0.7) {
		return strconv.FormatInt(pick(g, dateOffsets), 10)
	}
	return strconv.FormatInt(g.r.Int64N(2001)-1000, 10)
}

func (g *gen) dateLitCall() string { return "date('" + g.date().String() + "')" }

func (g *gen) isoLit() string { return g.celString(g.date().String()) }

// dateTerm is a date-typed expression; nest bounds date_add nesting so that
// values stay within years 1..9999.
func (g *gen) dateTerm(nest int) string {
	switch n := g.r.IntN(20); {
	case n < 9:
		return "c_date"
	case n < 12:
		return g.dateLitCall()
	case n < 16 && nest > 0:
		fn := pick(g, []string{"date_add", "date_sub"})
		return fn + "(" + g.dateTerm(nest-1) + ", " + g.offset() + ")"
	default:
		return "current_date()"
	}
}

func (g *gen) dateCompare() string {
	a, b := g.dateTerm(2), g.dateTerm(2)
	if a != "c_date" && b != "c_date" && !strings.Contains(a+b, "c_date") && g.chance(0.8) {
		a = "c_date"
	}
	switch g.r.IntN(5) {
	case 0:
		b = g.isoLit() // ISO string literal on the right
	case 1:
		a, b = g.isoLit(), a // and on the left
	}
	return a + " " + g.op() + " " + b
}

// tsLit is timestamp('RFC 3339') in some offset, with 0..6 fraction digits.
func (g *gen) tsLit() string {
	t := g.stamp().In(time.FixedZone("", pick(g, inputZones)))
	layout := "2006-01-02T15:04:05"
	if t.Nanosecond() != 0 || g.chance(0.2) {
		layout += pick(g, []string{".000000", ".999999"})
	}
	return "timestamp(" + g.celString(t.Format(layout+"Z07:00")) + ")"
}

func (g *gen) tsTerm() string {
	switch n := g.r.IntN(10); {
	case n < 6:
		return pick(g, tsCols)
	case n < 8:
		return g.tsLit()
	default:
		return "current_timestamp()"
	}
}

func (g *gen) tsCompare() string {
	a, b := g.tsTerm(), g.tsTerm()
	if !strings.Contains(a+b, "c_") {
		a = pick(g, tsCols)
	}
	return a + " " + g.op() + " " + b
}

func (g *gen) inAtom() string {
	n := 1 + g.r.IntN(4)
	var x string
	var item func() string
	switch g.r.IntN(6) {
	case 0:
		x, item = pick(g, intCols), g.intLit
	case 1:
		x, item = pick(g, dblCols), func() string {
			if g.chance(0.3) {
				return g.intLit()
			}
			return g.dblLit()
		}
	case 2:
		x, item = pick(g, strCols), g.strLit
	case 3:
		x, item = "c_bool", g.boolLit
	case 4:
		x = "c_date"
		if g.chance(0.3) {
			x = pick(g, []string{"date_add", "date_sub"}) + "(c_date, " + g.offset() + ")"
		}
		item = func() string {
			if g.chance(0.5) {
				return g.isoLit()
			}
			return g.dateLitCall()
		}
	default:
		// List elements are literals (RW208): current_date() and
		// current_timestamp() are not accepted inside the list, but a
		// folded date_add(date('…'), n) is.
		x, item = pick(g, tsCols), g.tsLit
		if g.chance(0.3) {
			x, item = "c_date", func() string { return "date_add(" + g.dateLitCall() + ", " + g.offset() + ")" }
		}
	}
	items := make([]string, n)
	for i := range items {
		items[i] = item()
	}
	return x + " in [" + strings.Join(items, ", ") + "]"
}

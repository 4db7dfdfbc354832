package predicate

import (
	"strings"
	"testing"
	"unicode"

	"github.com/rwc-dev/rwc/run/pgtest"
)

// A string literal reads back as the same string on the server, under
// either standard_conforming_strings, and holds no raw control character
// for a terminal or a pull request comment to act on.
func TestStringLiteralRoundTrip(t *testing.T) {
	db, _ := pgtest.DB(t)
	db.SetMaxOpenConns(1) // set_config below is per session
	for _, v := range []string{"plain", "it's", `back\slash`, "line\nbreak", "\x1b[2J\r", "tab\there", "\u009b31m", "é€\x7f", `\'; DROP TABLE x; --`} {
		lit := stringLiteral(v)
		if strings.ContainsFunc(lit, unicode.IsControl) {
			t.Errorf("%q renders with a raw control character: %q", v, lit)
		}
		for _, scs := range []string{"on", "off"} {
			var got string
			if err := db.QueryRow("SELECT set_config('standard_conforming_strings', $1, false)", scs).Scan(&got); err != nil {
				t.Fatal(err)
			}
			var same bool
			if err := db.QueryRow("SELECT "+lit+" = $1", v).Scan(&same); err != nil || !same {
				t.Errorf("%s (standard_conforming_strings %s) is not %q: %v", lit, scs, v, err)
			}
		}
	}
}

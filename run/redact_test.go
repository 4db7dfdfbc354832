package run

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lib/pq"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db?password=secret", "postgres://u@h/db?password=xxxxx"},
		{"postgres://h/db?user=u&password=secret", "postgres://h/db?password=xxxxx&user=u"},
		{"postgres://h/db?PASSWORD=secret&sslpassword=secret", "postgres://h/db?PASSWORD=xxxxx&sslpassword=xxxxx"},
		{"postgres://u:se%zz@h/db", "postgres://xxxxx@h/db"},
		{"postgres://u:secret@h/db?x=%zz", "postgres://u:xxxxx@h/db?x=%zz"},
		{"postgres://u:se@cret@h/db", "postgres://u:xxxxx@h/db"},
		// A '/', '?' or '#' in the password ends the authority early: all
		// up to the last '@' goes, whatever '@' and '/' the password holds.
		{"postgres://u:s@h/e#c@ret@h:5432/db", "postgres://xxxxx@h:5432/db"},
		{"postgres://u:se?cret@h/db", "postgres://xxxxx@h/db"},
		{"postgres://u:se/cret/h/db", "postgres://u:xxxxx"},
		{"postgres://u@h/db?password=se&cret&sslmode=disable", "postgres://u@h/db?password=xxxxx"},
		{"postgres://u@h/db?sslmode=disable&password=se#cret", "postgres://u@h/db?sslmode=disable&password=xxxxx#xxxxx"},
		{"postgres://u:secret@h/db\n", "postgres://u:xxxxx@h/db"},
		{"postgres:/u:secret@h/db", "postgres://u:xxxxx@h/db"},
		{"host=h password=secret dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password = secret dbname=d", "host=h password = xxxxx dbname=d"},
		{"host=h password='se cr\\'et' dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password=se\\ cret dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password='se cret dbname=d", "host=h …"},
		{"host=h password=se cret dbname=d", "host=h password=xxxxx …"},
		{"host=h password secret", "host=h …"},
		{"host=h password=ab://secret", "host=h password=xxxxx"},
		{"postgres://postgres@127.0.0.1:5432/rwc", "postgres://postgres@127.0.0.1:5432/rwc"},
	} {
		got := Redact(c.in)
		if got != c.want || strings.Contains(got, "secret") || strings.Contains(got, "cret") || strings.Contains(got, "se%zz") {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRedactText: the password goes however a message prints it.
func TestRedactText(t *testing.T) {
	for _, c := range []struct{ dsn, pw, text string }{
		{"postgres://u:se%zz@h/db", "se%zz", `parse "postgres://u:se%zz@h/db": invalid URL escape "%zz"`},
		{`postgres://u:Mal"form@h/db`, `Mal"form`, fmt.Sprintf("parse %q: net/url: invalid userinfo", `postgres://u:Mal"form@h/db`)},
		{"postgres://u:Ta\tb@h/db", "Ta\tb", fmt.Sprintf("parse %q: net/url: invalid control character in URL", "postgres://u:Ta\tb@h/db")},
		{"postgres://u:En%40cod@h/db", "En@cod", `password "En@cod" rejected; En%40cod; En@cod`},
		{"postgres://u:s%20cret@h/db", "s cret", `user:password=s cret or s+cret or s%20cret`},
		{"postgres://u@h/db?password=a+b%21", "a b!", `got "a b!" and a%20b%21 and a+b%21`},
		{`host=h password='it\'s\\x'`, `it's\x`, `password='it\'s\\x' or "it's\\x" or it's\x`},
		{"postgres://u:Ünï@h/db", "Ünï", `"\u00dcn\u00ef" and %C3%9Cn%C3%AF and Ünï`},
		{"host=h password=se cret", "se cret", `missing "=" after "cret" in connection info string: se cret`},
	} {
		got := RedactText(c.text, c.dsn)
		for _, f := range []string{c.pw, url.QueryEscape(c.pw), url.PathEscape(c.pw), strconv.Quote(c.pw), strconv.QuoteToASCII(c.pw)} {
			if strings.Contains(got, strings.Trim(f, `"`)) {
				t.Errorf("RedactText(%q, %q) = %q: %q is still there", c.text, c.dsn, got, f)
			}
		}
	}
	if got := RedactText("no password here", "postgres://postgres@127.0.0.1/rwc"); got != "no password here" {
		t.Errorf("RedactText changed a text without a password: %q", got)
	}
}

// TestCheckDSN: the message names the source and the part, and never
// holds the password.
func TestCheckDSN(t *testing.T) {
	// libpq's lists of hosts, each with a port, are accepted.
	for _, ok := range []string{`postgres://app:pw@h:5432,h2:5433/db`, `host=h1,h2 port=5432,5433 dbname=d`} {
		if err := CheckDSN("--dsn", ok); err != nil {
			t.Errorf("CheckDSN(%q) = %v, want nil", ok, err)
		}
	}
	for _, c := range []struct{ dsn, want string }{
		{`postgres://app:Mal"form-pw@h:5432/db`, `--dsn: malformed connection URL "postgres://xxxxx@h:5432/db": the user info`},
		{`postgres://app:p@ss/w#rd@h:5432/db`, `"postgres://xxxxx@h:5432/db": the user info .* or '#' in the password ends the host part early`},
		{`postgres://app:100%pw@h/db`, `the user info .* has a '%' that does not start a percent-encoding`},
		{`postgres://app:pw@h h/db`, `"postgres://app:xxxxx@h h/db": the host has a character`},
		{`postgres://app:pw@[::1/db`, `the host has a character`},
		{`postgres://app:pw@h:0/db`, `the port is not a number from 1 to 65535`},
		{`postgres://app:pw@h:5432,h2:x/db`, `the port is not a number`},
		{`postgres://app:pw@h/d%zzb`, `the database name`},
		{`postgres://app@h/db?password=a&b`, `"postgres://app@h/db\?password=xxxxx": a query parameter has no '='`},
		{`postgres://app@h/db?sslmode=%zz`, `the query parameter "sslmode" has a '%'`},
		{`postgres://app@h/db#x`, `it has a '#'`},
		{`postgres://app@h/db?sslmode=bogus&password=pw`, `the driver does not accept the value of "sslmode"`},
		{` postgres://app:pw@h/db`, `white space`},
		{`Postgres://app:pw@h/db`, `the scheme`},
		{`http://app:pw@h/db`, `the scheme`},
		{`h:5432`, `the scheme`},
		{`localhost`, `malformed connection string "…": a key=value setting has no '=' at the start`},
		{`host=h password='pw`, `"host=h …": the value of "password" has an unterminated single quote`},
		{`host=h password=p w`, `no '=' after the "password" setting`},
		{`host=h password=pw\`, `the value of "password" ends with a backslash`},
		{`host=h =pw`, `has no key`},
		{`host=h port=x password=pw`, `the value of "port"`},
	} {
		err := CheckDSN("--dsn", c.dsn)
		var de *DSNError
		if !errors.As(err, &de) {
			t.Errorf("CheckDSN(%q) = %v, want a DSNError", c.dsn, err)
			continue
		}
		if !matches(c.want, err.Error()) || strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "rd@") {
			t.Errorf("CheckDSN(%q) = %q, want %q", c.dsn, err, c.want)
		}
	}
	for _, ok := range []string{
		"postgres://postgres@127.0.0.1:5432/rwc?sslmode=disable",
		"postgresql://u:p%40ss%2Fw%23rd@h,h2/db?port=5432,5433&user=a@b",
		"postgres://u:p@ss@[::1]:5432/db",
		"postgres:///db?host=/tmp",
		"host=/tmp dbname=d password='a b' sslmode=disable",
		"host=h password=ab://cd",
		"",
	} {
		if err := CheckDSN("RWC_DATABASE_URL", ok); err != nil {
			t.Errorf("CheckDSN(%q) = %v, want nil", ok, err)
		}
	}
}

// TestKVLikeLibPQ: the password parseKV finds is the one lib/pq reads, and
// it finds a problem exactly where lib/pq fails.
func TestKVLikeLibPQ(t *testing.T) {
	for _, s := range []string{
		`password=a`, `password = 'a b'`, `password='a\'b\\c' host=h`, `password=a\ b`, `password=`,
		`host=h password=  x`, `password= host=h`, "password=a\tb=c", `password='a`, `password=a\`,
		`password a`, `host`, `host=h  password='' dbname=d`, `password='\`, `x=1 password=Ünï`,
	} {
		cfg, pqErr := pq.NewConfig(s)
		kp := parseKV(s)
		if (pqErr != nil) != (kp.problem != "") {
			t.Errorf("%q: lib/pq says %v, parseKV %q", s, pqErr, kp.problem)
			continue
		}
		if pqErr != nil {
			continue
		}
		var pw string
		for _, p := range kp.pairs {
			if p.key == "password" {
				pw = p.val
			}
		}
		if pw != cfg.Password {
			t.Errorf("%q: parseKV reads the password %q, lib/pq %q", s, pw, cfg.Password)
		}
	}
}

func matches(re, s string) bool {
	ok, err := regexp.MatchString(re, s)
	return err == nil && ok
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dsnCase is a connection string rwc cannot use, whose password must not
// show in any output: marks are distinctive pieces of it that must not
// either, and want is what the message must say (which part is wrong).
type dsnCase struct {
	name, dsn, password string
	marks               []string
	want                string
}

// dsnCases use only 127.0.0.1 and port, which is closed, wherever a
// driver could read a host and port out of them (even the wrong way).
func dsnCases(port int) []dsnCase {
	hp := fmt.Sprintf("127.0.0.1:%d", port)
	userinfo := `user info \(user:password before @\) has a character that must be percent-encoded`
	refused := `cannot connect to .*connection refused`
	return []dsnCase{
		{"quote", `postgres://app:Mal"form-pw@` + hp + `/db`, `Mal"form-pw`, []string{"form-pw"}, userinfo},
		{"at slash hash", `postgres://app:p@` + hp + `/w#rd-pw@` + hp + `/db`, `p@` + hp + `/w#rd-pw`, []string{"w#rd-pw", "rd-pw"}, userinfo},
		{"slash", `postgres://app:Sla/sh-pw@` + hp + `/db`, `Sla/sh-pw`, []string{"sh-pw"}, userinfo},
		{"question mark", `postgres://app:Que?ry-pw@` + hp + `/db`, `Que?ry-pw`, []string{"ry-pw"}, userinfo},
		{"hash", `postgres://app:Ha#sh-pw@` + hp + `/db`, `Ha#sh-pw`, []string{"sh-pw"}, userinfo},
		{"percent", `postgres://app:Pc%zz-pw@` + hp + `/db`, `Pc%zz-pw`, []string{"zz-pw"}, `user info .* has a '%' that does not start a percent-encoding`},
		{"space", `postgres://app:Spa ce-pw@` + hp + `/db`, `Spa ce-pw`, []string{"ce-pw"}, userinfo},
		{"tab", "postgres://app:Ta\tb-pw@" + hp + "/db", "Ta\tb-pw", []string{"b-pw"}, userinfo},
		{"backslash", `postgres://app:Back\slash-pw@` + hp + `/db`, `Back\slash-pw`, []string{"slash-pw"}, userinfo},
		{"non-ASCII", `postgres://app:Ünï-pw@` + hp + `/db`, `Ünï-pw`, []string{"nï-pw"}, userinfo},
		{"no at", `postgres://app:No-at-pw/` + hp + `/db`, `No-at-pw`, nil, `the port is not a number`},
		{"unencoded at, unreachable", `postgres://app:At@only-pw@` + hp + `/db?sslmode=disable`, `At@only-pw`, []string{"only-pw"}, refused},
		{"percent-encoded, unreachable", `postgres://app:Enc%40ded-pw@` + hp + `/db?sslmode=disable`, `Enc%40ded-pw`, []string{"Enc@ded-pw", "ded-pw"}, refused},
		{"closed port", `postgres://app:Closed-port-pw@` + hp + `/db?sslmode=disable`, `Closed-port-pw`, []string{"port-pw"}, refused},
		{"password parameter, unreachable", `postgres://app@` + hp + `/db?sslmode=disable&password=Query-only-pw`, `Query-only-pw`, []string{"only-pw"}, refused},
		{"password parameter with ampersand", `postgres://app@` + hp + `/db?password=Amp&ersand-pw`, `Amp&ersand-pw`, []string{"ersand-pw"}, `query parameter has no '='`},
		{"password parameter with percent", `postgres://app@` + hp + `/db?password=Qp%zz-pw`, `Qp%zz-pw`, []string{"zz-pw"}, `query parameter "password" has a '%'`},
		{"password parameter with hash", `postgres://app@` + hp + `/db?password=Frag#ment-pw`, `Frag#ment-pw`, []string{"ment-pw"}, `it has a '#'`},
		{"trailing newline", "postgres://app:Newline-pw@" + hp + "/db\n", "Newline-pw", nil, `white space or a line break`},
		{"port out of range", `postgres://app:Port-pw@127.0.0.1:99999/db`, `Port-pw`, nil, `the port is not a number from 1 to 65535`},
		{"sslmode", `postgres://app:Ssl-mode-pw@` + hp + `/db?sslmode=bogus`, `Ssl-mode-pw`, nil, `the value of "sslmode"`},
		{"upper-case scheme", `POSTGRES://app:Upper-pw@` + hp + `/db`, `Upper-pw`, nil, `the scheme must be postgres://`},
		{"other scheme", `mysql://app:My-sql-pw@` + hp + `/db`, `My-sql-pw`, nil, `the scheme must be postgres://`},
		{"one slash", `postgres:/app:One-slash-pw@` + hp + `/db`, `One-slash-pw`, nil, `the scheme must be postgres://`},
		{"key=value unterminated quote", fmt.Sprintf(`host=127.0.0.1 port=%d user=app password='Unter minated-pw`, port), `Unter minated-pw`, []string{"minated-pw"}, `the value of "password" has an unterminated single quote`},
		{"key=value unquoted space", fmt.Sprintf(`host=127.0.0.1 port=%d user=app password=Un quoted-pw`, port), `Un quoted-pw`, []string{"quoted-pw"}, `setting has no '=' after the "password" setting`},
		{"key=value password without =", fmt.Sprintf(`host=127.0.0.1 port=%d user=app password Kv-noeq-pw`, port), `Kv-noeq-pw`, nil, `setting has no '='`},
		{"key=value trailing backslash", fmt.Sprintf(`host=127.0.0.1 port=%d password=Trail-pw\`, port), `Trail-pw\`, []string{"Trail-pw"}, `ends with a backslash`},
		{"key=value bad port", `host=127.0.0.1 port=abc user=app password=Kv-port-pw`, `Kv-port-pw`, nil, `the value of "port"`},
		{"key=value quoted, unreachable", fmt.Sprintf(`host=127.0.0.1 port=%d user=app password='Kv q\'uo\\te-pw' sslmode=disable`, port), `Kv q'uo\te-pw`, []string{`uo\te-pw`, `uo\\te-pw`, "te-pw"}, refused},
		{"key=value URL-like password, unreachable", fmt.Sprintf(`host=127.0.0.1 port=%d user=app password=Url://in-pw@x sslmode=disable`, port), `Url://in-pw@x`, []string{"in-pw"}, refused},
	}
}

// dsnCommand is an rwc invocation; db: it needs the database (exit 1, the
// message), else the exit status it has with no database at all.
type dsnCommand struct {
	args []string
	db   bool
	exit int
}

var dsnCommands = []dsnCommand{
	{[]string{"lint"}, false, 0},
	{[]string{"plan", "--at", "2026-11-29"}, true, 1},
	{[]string{"apply", "--allow-dirty"}, true, 1},
	{[]string{"refresh", "page_views", "--allow-dirty"}, true, 1},
	{[]string{"refresh", "page_views", "--explain"}, false, 0},
	{[]string{"backfill", "new", "page_views", "--where", "event_date >= date('2026-01-01')", "--reason", "dsn test"}, false, 0},
	{[]string{"status"}, true, 1},
	{[]string{"events"}, true, 1},
	{[]string{"local", "url"}, false, 1},
	{[]string{"local", "stop"}, false, 0},
	{[]string{"--help"}, false, 0},
}

const dsnSpec = `pipeline: views
schema: analytics
tables:
  page_views:
    replace_where: event_date >= date_add(current_date(), -2)
    columns:
      event_date: date
      views: bigint
    query: SELECT event_date, count(*) AS views FROM events GROUP BY event_date
`

// TestDSNNeverPrinted runs every command with every connection string of
// dsnCases, given by --dsn and by RWC_DATABASE_URL, and looks for the
// password in all their output, as written and as it could be printed:
// Go-quoted, percent-encoded, percent-decoded, and its distinctive pieces.
func TestDSNNeverPrinted(t *testing.T) {
	bin, err := exec.LookPath("rwc") // testscript's TestMain put it there
	if err != nil {
		t.Fatal(err)
	}
	port := closedPort(t)
	for _, c := range dsnCases(port) {
		for _, viaEnv := range []bool{false, true} {
			for _, cmd := range dsnCommands {
				name := fmt.Sprintf("%s/%s/%s", c.name, map[bool]string{false: "flag", true: "env"}[viaEnv], strings.Join(cmd.args[:min(2, len(cmd.args))], "_"))
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					checkDSNRun(t, bin, c, viaEnv, cmd)
				})
			}
		}
	}
}

func checkDSNRun(t *testing.T, bin string, c dsnCase, viaEnv bool, cmd dsnCommand) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipelines", "views.yaml"), []byte(dsnSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	args := cmd.args
	env := dsnEnv(dir)
	if viaEnv {
		env = append(env, "RWC_DATABASE_URL="+c.dsn)
	} else {
		args = append([]string{"--dsn", c.dsn}, args...)
	}
	run := exec.Command(bin, args...)
	run.Dir, run.Env = dir, env
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	code := 0
	if err := run.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	out := stdout.String() + stderr.String()
	for _, f := range passwordForms(c) {
		if strings.Contains(out, f) {
			t.Errorf("the output holds %q (from the password %q):\n%s", f, c.password, out)
		}
	}
	if code != cmd.exit {
		t.Errorf("exit status %d, want %d:\n%s", code, cmd.exit, out)
	}
	if cmd.db && !regexp.MustCompile(c.want).MatchString(stderr.String()) {
		t.Errorf("stderr does not match %q:\n%s", c.want, stderr.String())
	}
}

// dsnEnv is the environment rwc runs in: no PG* variable (the driver reads
// them) nor another RWC_DATABASE_URL, and a HOME without a .pgpass.
func dsnEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "RWC_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+dir, "RWC_TIMEZONE=")
}

// passwordForms is every way c's password could be printed.
func passwordForms(c dsnCase) []string {
	plain := []string{c.password}
	if d, err := url.PathUnescape(c.password); err == nil {
		plain = append(plain, d)
	}
	forms := append([]string{}, c.marks...)
	for _, p := range plain {
		q := strconv.Quote(p)
		a := strconv.QuoteToASCII(p)
		forms = append(forms, p, q[1:len(q)-1], a[1:len(a)-1], url.QueryEscape(p), url.PathEscape(p),
			strings.TrimPrefix(url.UserPassword("", p).String(), ":"))
	}
	return forms
}

// closedPort is a loopback port nothing listens on: one the kernel just
// handed out and that was closed again.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// A connection string typed where a command or a directory belongs is
// echoed by the error, with its password hidden.
func TestStrayDSNArgumentRedacted(t *testing.T) {
	bin, err := exec.LookPath("rwc")
	if err != nil {
		t.Fatal(err)
	}
	const url = "postgres://app:Stray-Pw-7@127.0.0.1:1/db"
	for _, args := range [][]string{{url}, {"apply", url}, {"--dsn=", url}, {"lint", "--chdir=" + url}} {
		dir := t.TempDir()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, dsnEnv(dir)
		out, _ := cmd.CombinedOutput()
		if strings.Contains(string(out), "Stray-Pw-7") || !strings.Contains(string(out), "xxxxx") {
			t.Errorf("rwc %q:\n%s", args, out)
		}
	}
}

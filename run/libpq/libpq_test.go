package libpq

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lib/pq"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The password file is read as libpq reads it: fields *, escapes, the
// database defaulting to the user, localhost for the default socket, and
// a file others may read ignored with a warning.
func TestPasswordFor(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pgpass")
	content := `# comment
db.example:5432:app:alice:first
db.example:*:*:bob:second
*:6543:*:*:third
localhost:5432:carol:carol:fourth
h\:x:5432:app:dave:pa\:ss\\word
db.example:5432:app:alice:not-this-one
`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host, hostaddr, port, db, user, want string
	}{
		{"db.example", "", "5432", "app", "alice", "first"}, // the first match wins
		{"db.example", "", "5433", "other", "bob", "second"},
		{"anything", "", "6543", "x", "y", "third"},
		{"", "", "5432", "", "carol", "fourth"},                    // no host: localhost; no database: the user's
		{"/var/run/postgresql", "", "5432", "", "carol", "fourth"}, // the default socket is localhost
		{"/srv/sockets", "", "5432", "carol", "carol", ""},         // another socket directory is not
		{"", "10.0.0.1", "5432", "app", "alice", ""},               // hostaddr when no host
		{"h:x", "", "5432", "app", "dave", `pa:ss\word`},
		{"db.example", "", "5432", "app", "eve", ""},
	} {
		got, warning := PasswordFor(file, c.host, c.hostaddr, c.port, c.db, c.user)
		if got != c.want || warning != "" {
			t.Errorf("PasswordFor(%q, %q, %q, %q, %q) = %q, %q; want %q", c.host, c.hostaddr, c.port, c.db, c.user, got, warning, c.want)
		}
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	got, warning := PasswordFor(file, "db.example", "", "5432", "app", "alice")
	if got != "" || !strings.Contains(warning, "has group or world access; permissions should be u=rw (0600) or less; it is ignored") {
		t.Errorf("a readable file: %q, %q", got, warning)
	}
	if got, warning := PasswordFor(filepath.Join(dir, "none"), "h", "", "5432", "d", "u"); got != "" || warning != "" {
		t.Errorf("no file: %q, %q", got, warning)
	}
}

// Services: PGSERVICEFILE (else ~/.pg_service.conf), then
// PGSYSCONFDIR/pg_service.conf; the connection string's parameters rank
// above the service's, which rank above the environment's.
func TestServices(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user.conf")
	sys := filepath.Join(dir, "sys")
	os.MkdirAll(sys, 0o755)
	os.WriteFile(user, []byte("[app]\nhost = db.example\nport=6543\n# comment\ndbname=app\n\n[other]\nhost=other\n"), 0o600)
	os.WriteFile(filepath.Join(sys, "pg_service.conf"), []byte("[system]\nhost=sys.example\ndbname=sysdb\n[app]\nhost=shadowed\n"), 0o644)
	lookup := env(map[string]string{"PGSERVICEFILE": user, "PGSYSCONFDIR": sys})
	for service, want := range map[string]map[string]string{
		"app":    {"host": "db.example", "port": "6543", "dbname": "app"},
		"other":  {"host": "other"},
		"system": {"host": "sys.example", "dbname": "sysdb"},
	} {
		got, err := FindService(service, lookup)
		if err != nil || KV(got) != KV(want) {
			t.Errorf("FindService(%q) = %v, %v; want %v", service, got, err, want)
		}
	}
	if _, err := FindService("missing", lookup); err == nil || !strings.Contains(err.Error(), `definition of service "missing" not found (looked in `+user+" and "+filepath.Join(sys, "pg_service.conf")+")") {
		t.Errorf("missing service: %v", err)
	}

	t.Setenv("PGSERVICEFILE", user)
	t.Setenv("PGSYSCONFDIR", sys)
	t.Setenv("PGDATABASE", "fromenv")
	t.Setenv("PGPASSFILE", filepath.Join(dir, "none"))
	cfg, err := Config("service=app dbname=mine", os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "db.example" || cfg.Port != 6543 || cfg.Database != "mine" {
		t.Errorf("service=app dbname=mine: host %q port %d dbname %q; want db.example 6543 mine", cfg.Host, cfg.Port, cfg.Database)
	}
	t.Setenv("PGSERVICE", "system")
	if cfg, err = Config("", os.LookupEnv); err != nil || cfg.Host != "sys.example" || cfg.Database != "sysdb" {
		t.Errorf("PGSERVICE=system: host %q dbname %q, %v; want sys.example sysdb", cfg.Host, cfg.Database, err)
	}
	if cfg, err = Config("postgres://u@h.example/d", os.LookupEnv); err != nil || cfg.Host != "h.example" || cfg.Database != "d" {
		t.Errorf("a URL and PGSERVICE: host %q dbname %q, %v; want h.example d", cfg.Host, cfg.Database, err)
	}
}

// sslmode is prefer unless something sets it, as libpq has it.
func TestSSLModeDefault(t *testing.T) {
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	for dsn, want := range map[string]pq.SSLMode{
		"postgres://u@db.example/d":                 "prefer",
		"host=db.example dbname=d":                  "prefer",
		"postgres://u@db.example/d?sslmode=require": "require",
		"host=db.example sslmode=disable":           "disable",
		"host=/tmp/sock dbname=d":                   "disable", // a socket
	} {
		cfg, err := Config(dsn, os.LookupEnv)
		if err != nil || cfg.SSLMode != want {
			t.Errorf("%s: sslmode %q, %v; want %q", dsn, cfg.SSLMode, err, want)
		}
	}
	t.Setenv("PGSSLMODE", "verify-full")
	if cfg, err := Config("host=db.example", os.LookupEnv); err != nil || cfg.SSLMode != "verify-full" {
		t.Errorf("PGSSLMODE=verify-full: %q, %v", cfg.SSLMode, err)
	}
}

// A password file others may read is warned of once, and the driver does
// not read it again.
func TestConfigPassFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pgpass")
	os.WriteFile(file, []byte("db.example:5432:d:u:s3cret\n"), 0o600)
	t.Setenv("PGPASSFILE", file)
	cfg, err := Config("host=db.example dbname=d user=u", os.LookupEnv)
	if err != nil || cfg.Password != "s3cret" {
		t.Fatalf("password %q, %v", cfg.Password, err)
	}
	os.Chmod(file, 0o640)
	var w bytes.Buffer
	old := Warnings
	Warnings = &w
	defer func() { Warnings = old }()
	if cfg, err = Config("host=db.example dbname=d user=u", os.LookupEnv); err != nil || cfg.Password != "" {
		t.Fatalf("a readable file: password %q, %v", cfg.Password, err)
	}
	if !strings.Contains(w.String(), "has group or world access") || strings.Contains(w.String(), "s3cret") {
		t.Errorf("warning %q", w.String())
	}
}

func TestEnvDSN(t *testing.T) {
	lookup := env(map[string]string{"PGHOST": "db.example", "PGDATABASE": "my app", "PGUSER": "alice", "PGPASSWORD": "secret", "PGSSLMODE": "require"})
	if got, want := EnvDSN(lookup), "host=db.example dbname='my app' user=alice"; got != want {
		t.Errorf("EnvDSN = %q, want %q", got, want)
	}
	if got := NamingVars(lookup); strings.Join(got, ",") != "PGHOST,PGDATABASE" {
		t.Errorf("NamingVars = %v", got)
	}
	if got := NamingVars(env(map[string]string{"PGUSER": "alice", "PGPASSWORD": "x", "PGHOST": ""})); len(got) != 0 {
		t.Errorf("PGUSER alone names no server: %v", got)
	}
}

// A value holding whitespace other than ASCII space, tab and newline (a
// no-break space, a vertical tab, a carriage return) survives the
// round-trip through KV: lib/pq splits values at every unicode.IsSpace,
// and an unquoted one broke the connection string apart, the driver's
// error then quoting the password's tail (which no redaction knew of).
func TestConfigPasswordWithUnicodeSpace(t *testing.T) {
	for _, pw := range []string{"pa\u00a0ss$word", "pa\vss", "pa\rss", "pa\fss", "pa\u2003ss", "pa\u0085ss"} {
		for _, dsn := range []string{
			"host=127.0.0.1 port=1 password='" + pw + "'",
			"postgres://u:" + strings.ReplaceAll(strings.ReplaceAll(urlEscape(pw), "$", "%24"), "+", "%20") + "@127.0.0.1:1/db",
		} {
			for _, f := range []func(string, Lookup) (pq.Config, error){Config, Check} {
				cfg, err := f(dsn, env(nil))
				if err != nil {
					t.Errorf("%q: %v", dsn, err)
					continue
				}
				if cfg.Password != pw {
					t.Errorf("%q: password %q, want %q", dsn, cfg.Password, pw)
				}
			}
		}
	}
	// And from a service file.
	dir := t.TempDir()
	file := filepath.Join(dir, "services")
	if err := os.WriteFile(file, []byte("[s]\nhost=127.0.0.1\npassword=pa\u00a0ss$word\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Check("service=s", env(map[string]string{"PGSERVICEFILE": file}))
	if err != nil || cfg.Password != "pa\u00a0ss$word" {
		t.Errorf("a service's password with a no-break space: %q, %v", cfg.Password, err)
	}
}

func urlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

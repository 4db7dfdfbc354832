// Package libpq resolves a connection string as libpq (psql) does, where
// lib/pq, the driver, differs: the default sslmode is prefer (lib/pq's is
// require, which fails on a server without SSL where psql succeeds), a
// service's parameters come from ~/.pg_service.conf or PGSERVICEFILE, else
// the system's pg_service.conf (PGSYSCONFDIR), and rank below the
// connection string's own (lib/pq lets them override it); the password
// file's entries match as libpq matches them (a database not named is the
// user's; localhost matches the default Unix socket); and, with no host
// named anywhere, the server is the default Unix socket when there is one.
// Everything else, the PG* environment variables included, lib/pq reads
// itself, as libpq does.
package libpq

import (
	"bufio"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/lib/pq"
)

// Lookup is os.LookupEnv, or a test's environment.
type Lookup func(string) (string, bool)

// ServerVars are the variables that name a server (or a database on one):
// with any set, rwc connects as psql would, not to its local PostgreSQL.
// PGUSER, PGPASSWORD, PGSSLMODE and the like qualify a connection; alone
// they name no server.
var ServerVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGSERVICE"}

// NamingVars are the ServerVars set (not empty) in the environment.
func NamingVars(lookup Lookup) []string {
	var out []string
	for _, k := range ServerVars {
		if v, _ := lookup(k); v != "" {
			out = append(out, k)
		}
	}
	return out
}

// EnvDSN is the connection string the environment names, in key=value
// form, for messages as much as for the driver: the server-naming
// variables and PGUSER, never the password (the driver reads PGPASSWORD
// itself, and the password file).
func EnvDSN(lookup Lookup) string {
	var parts []string
	for _, kv := range [][2]string{{"PGSERVICE", "service"}, {"PGHOST", "host"}, {"PGHOSTADDR", "hostaddr"}, {"PGPORT", "port"}, {"PGDATABASE", "dbname"}, {"PGUSER", "user"}} {
		if v, _ := lookup(kv[0]); v != "" {
			parts = append(parts, kv[1]+"="+Quote(v))
		}
	}
	return strings.Join(parts, " ")
}

// Quote writes v as a key=value value: quoted when it must be, which is
// when it holds a quote, a backslash or any white space lib/pq splits at
// (unicode.IsSpace: a no-break space, a vertical tab, \r, … too).
func Quote(v string) string {
	if v != "" && !strings.ContainsAny(v, `'\`) && !strings.ContainsFunc(v, unicode.IsSpace) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Config is the driver's configuration for dsn, resolved as libpq resolves
// it (see the package comment). The environment is lookup's for what this
// package decides, and the process's for what lib/pq reads.
func Config(dsn string, lookup Lookup) (pq.Config, error) {
	return config(dsn, lookup, true)
}

// Check is Config without the password file (nor its warning): whether
// dsn, with the environment and the service it names, is one the driver
// accepts.
func Check(dsn string, lookup Lookup) (pq.Config, error) {
	return config(dsn, lookup, false)
}

func config(dsn string, lookup Lookup, passfile bool) (pq.Config, error) {
	params, err := Params(dsn)
	if err != nil {
		// The driver's own error says what is wrong (it is checked for
		// secrets before it is shown: run.CheckDSN).
		return pq.NewConfig(dsn)
	}
	service := params["service"]
	if _, ok := params["service"]; !ok {
		service, _ = lookup("PGSERVICE")
	}
	var fromService map[string]string
	if service != "" {
		if fromService, err = FindService(service, lookup); err != nil {
			return pq.Config{}, &ServiceError{err}
		}
	}
	merged := map[string]string{}
	for k, v := range fromService {
		merged[k] = v
	}
	for k, v := range params {
		merged[k] = v
	}
	// lib/pq would read the service itself, ranking it above dsn.
	merged["service"] = ""
	cfg, err := pq.NewConfig(KV(merged))
	if err != nil {
		return pq.Config{}, err
	}
	if _, ok := merged["sslmode"]; !ok && cfg.SSLMode == "" {
		if v, _ := lookup("PGSSLMODE"); v == "" {
			cfg.SSLMode = pq.SSLModePrefer
		}
	}
	named := func(key, env string) bool {
		if v, ok := merged[key]; ok && v != "" {
			return true
		}
		v, _ := lookup(env)
		return v != ""
	}
	if !named("host", "PGHOST") && !named("hostaddr", "PGHOSTADDR") && len(cfg.Multi) == 0 {
		if dir := DefaultSocketDir(cfg.Port); dir != "" {
			cfg.Host = dir
			cfg.SSLMode = pq.SSLModeDisable // as lib/pq does for a socket
		}
	}
	if passfile && cfg.Password == "" && len(cfg.Multi) == 0 {
		file := PassFile(cfg.Passfile, lookup)
		if file != "" {
			pw, warning := PasswordFor(file, cfg.Host, cfg.Hostaddr.String(), strconv.Itoa(int(cfg.Port)), cfg.Database, cfg.User)
			if warning != "" {
				fmt.Fprintln(Warnings, warning)
			}
			cfg.Password = pw
		}
		// libpq's rules decided: lib/pq is not to look again by its own.
		cfg.Passfile = filepath.Join(os.DevNull, "no-passfile")
	}
	return cfg, nil
}

// ServiceError is a service that cannot be read: its files' fault, not the
// connection string's (its message quotes no password).
type ServiceError struct{ Err error }

func (e *ServiceError) Error() string { return e.Err.Error() }
func (e *ServiceError) Unwrap() error { return e.Err }

// Warnings is where a password file that is not private is warned of
// (libpq warns on stderr too, and ignores the file).
var Warnings io.Writer = os.Stderr

// SocketDirs are where libpq builds look for the server's Unix socket
// when no host is named: Debian's and Red Hat's /var/run/postgresql, and
// /tmp, PostgreSQL's own default.
var SocketDirs = []string{"/var/run/postgresql", "/tmp"}

// DefaultSocketDir is the first of SocketDirs holding a server's socket
// for port, or "" (then lib/pq connects to localhost over TCP).
func DefaultSocketDir(port uint16) string {
	for _, d := range SocketDirs {
		if st, err := os.Stat(filepath.Join(d, fmt.Sprintf(".s.PGSQL.%d", port))); err == nil && st.Mode()&os.ModeSocket != 0 {
			return d
		}
	}
	return ""
}

// Params are the parameters dsn (a URL or key=value string) gives
// explicitly.
func Params(dsn string) (map[string]string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return urlParams(dsn)
	}
	return parseKV(dsn)
}

// urlParams are a URL's parameters, read as the driver reads them (an
// empty value is not given).
func urlParams(dsn string) (map[string]string, error) {
	u, err := neturl.Parse(dsn)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		set("user", u.User.Username())
		set("password", pw)
	}
	if host, port, err := net.SplitHostPort(u.Host); err != nil {
		set("host", u.Host)
	} else {
		set("host", host)
		set("port", port)
	}
	if u.Path != "" {
		set("dbname", u.Path[1:])
	}
	for k := range u.Query() {
		set(k, u.Query().Get(k))
	}
	return out, nil
}

// parseKV reads a key=value connection string as libpq's conninfo_parse
// does: values in single quotes or bare, with backslash escapes.
func parseKV(s string) (map[string]string, error) {
	out := map[string]string{}
	r := []rune(s)
	i := 0
	skip := func() {
		for i < len(r) && unicode.IsSpace(r[i]) {
			i++
		}
	}
	for {
		skip()
		if i >= len(r) {
			return out, nil
		}
		start := i
		for i < len(r) && r[i] != '=' && !unicode.IsSpace(r[i]) {
			i++
		}
		key := string(r[start:i])
		skip()
		if i >= len(r) || r[i] != '=' {
			return nil, fmt.Errorf("missing = after %q", key)
		}
		i++
		skip()
		var val []rune
		if i < len(r) && r[i] == '\'' {
			i++
			for {
				if i >= len(r) {
					return nil, fmt.Errorf("unterminated quoted value")
				}
				if r[i] == '\'' {
					i++
					break
				}
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				val = append(val, r[i])
				i++
			}
		} else {
			for i < len(r) && !unicode.IsSpace(r[i]) {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				val = append(val, r[i])
				i++
			}
		}
		out[key] = string(val)
	}
}

// KV writes params as a key=value connection string.
func KV(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + Quote(params[k])
	}
	return strings.Join(parts, " ")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// home is the user's home directory ("" when unknown).
func home() string {
	h, _ := os.UserHomeDir()
	return h
}

// ServiceFiles are where libpq looks for service name: PGSERVICEFILE (else
// ~/.pg_service.conf), then PGSYSCONFDIR's pg_service.conf (else the
// system's: Debian's libpq keeps it in /etc/postgresql-common).
func ServiceFiles(lookup Lookup) []string {
	var files []string
	if f, _ := lookup("PGSERVICEFILE"); f != "" {
		files = append(files, f)
	} else if h := home(); h != "" {
		files = append(files, filepath.Join(h, ".pg_service.conf"))
	}
	dir, _ := lookup("PGSYSCONFDIR")
	if dir == "" {
		dir = "/etc/postgresql-common"
	}
	return append(files, filepath.Join(dir, "pg_service.conf"))
}

// FindService reads service's parameters from the first of ServiceFiles
// that defines it, as libpq reads them (a line is key=value; # starts a
// comment).
func FindService(service string, lookup Lookup) (map[string]string, error) {
	files := ServiceFiles(lookup)
	for _, file := range files {
		params, found, err := readService(file, service)
		if err != nil {
			return nil, fmt.Errorf("service file %s: %v", file, err)
		}
		if found {
			return params, nil
		}
	}
	return nil, fmt.Errorf("definition of service %q not found (looked in %s): check PGSERVICE or service=, or PGSERVICEFILE", service, strings.Join(files, " and "))
}

func readService(file, service string) (map[string]string, bool, error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var params map[string]string
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#':
			continue
		case line[0] == '[':
			if in {
				return params, true, nil
			}
			if strings.HasSuffix(line, "]") && strings.TrimSpace(line[1:len(line)-1]) == service {
				in, params = true, map[string]string{}
			}
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, false, fmt.Errorf("line %d: syntax error (a line is key=value)", n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "service" {
			return nil, false, fmt.Errorf("line %d: nested service specifications are not supported", n)
		}
		params[k] = v
	}
	return params, in, sc.Err()
}

// PassFile is the password file libpq would read: passfile (the
// connection's), else PGPASSFILE, else ~/.pgpass; "" when there is none.
func PassFile(passfile string, lookup Lookup) string {
	if passfile == "" {
		passfile, _ = lookup("PGPASSFILE")
	}
	if passfile == "" {
		h := home()
		if h == "" {
			return ""
		}
		passfile = filepath.Join(h, ".pgpass")
	}
	return passfile
}

// PasswordFor is the password the password file gives for a connection,
// matched as libpq matches it: each line is host:port:database:user:password,
// a field * matches anything, \ escapes : and \; the host is the host
// parameter (else hostaddr), and a Unix socket in a default directory
// matches localhost; the database, when not named, is the user's name. A
// file that is not a regular file, or that group or others may read, is
// ignored with a warning, as libpq ignores it (an absent file: "", "").
func PasswordFor(file, host, hostaddr, port, dbname, user string) (password, warning string) {
	st, err := os.Stat(file)
	if err != nil {
		return "", ""
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Sprintf("rwc: warning: password file %q is not a plain file; it is ignored", file)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Sprintf("rwc: warning: password file %q has group or world access; permissions should be u=rw (0600) or less; it is ignored", file)
	}
	if host == "" {
		host = hostaddr
	}
	if host == "" || host == "invalid IP" {
		host = "localhost"
	}
	if filepath.IsAbs(host) {
		for _, d := range SocketDirs {
			if filepath.Clean(host) == d {
				host = "localhost"
			}
		}
	}
	if dbname == "" {
		dbname = user
	}
	f, err := os.Open(file)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		fields := splitPass(line)
		if len(fields) < 5 {
			continue
		}
		match := func(field, v string) bool { return field == "*" || field == v }
		if match(fields[0], host) && match(fields[1], port) && match(fields[2], dbname) && match(fields[3], user) {
			return fields[4], ""
		}
	}
	return "", ""
}

// splitPass splits a password file line at its unescaped colons, the
// fifth field (the password) taking the rest of the line, unescaped.
func splitPass(line string) []string {
	var fields []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
		case c == ':' && len(fields) < 4:
			fields = append(fields, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(fields, b.String())
}

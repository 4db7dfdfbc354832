package run

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/rwc-dev/rwc/run/libpq"
)

// A connection string is checked here before the driver sees it: the
// driver's and net/url's parse errors quote it, password and all, and with
// Go escaping, which defeats a search for the password as written.

// DSNError is a malformed connection string: where it came from, what part
// is wrong and how to fix it, and the string with its password hidden.
type DSNError struct {
	Source   string // --dsn or RWC_DATABASE_URL
	Form     string // "connection URL" or "connection string"
	Redacted string
	Problem  string
}

func (e *DSNError) Error() string {
	return fmt.Sprintf("%s: malformed %s %q: %s", e.Source, e.Form, e.Redacted, e.Problem)
}

// CheckDSN returns a *DSNError when dsn is not a connection string the
// driver accepts, naming source (--dsn or RWC_DATABASE_URL); it never
// repeats the driver's or net/url's message, which may quote the password.
func CheckDSN(source, dsn string) error {
	v := inspectDSN(dsn)
	if v.problem == "" {
		var err error
		if v.problem, err = driverProblem(dsn); err != nil {
			return err
		}
	}
	if v.problem == "" {
		return nil
	}
	return &DSNError{Source: source, Form: v.form, Redacted: v.redacted, Problem: v.problem}
}

// dsnView is what rwc may say about a connection string.
type dsnView struct {
	form     string   // "connection URL" or "connection string"
	problem  string   // what is malformed and how to fix it; "" when nothing is
	redacted string   // the string with every password hidden
	secrets  []string // the passwords (and what may be one) as written
}

func inspectDSN(dsn string) dsnView {
	if isURLForm(dsn) {
		return inspectURL(dsn)
	}
	return inspectKV(dsn)
}

// urlForm is how a URL starts; a key=value string cannot (its first word
// holds '=' before any ':'), so a password with "://" in it stays a
// key=value password.
var urlForm = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9+.-]*:`)

func isURLForm(dsn string) bool { return urlForm.MatchString(dsn) }

// driverProblem asks lib/pq itself, for what only it checks (parameter
// values such as sslmode, host and port counts). Its message is summarised,
// not shown. An error about PG* environment variables is no fault of the
// connection string; its text quotes no connection string, so it is
// returned as it is.
func driverProblem(dsn string) (string, error) {
	_, err := libpq.Check(dsn, os.LookupEnv)
	if err == nil {
		return "", nil
	}
	var se *libpq.ServiceError
	if errors.As(err, &se) {
		return "", errors.New(RedactText(se.Error(), dsn))
	}
	msg := err.Error()
	if strings.Contains(msg, "$") || strings.Contains(msg, "environment variable") {
		return "", errors.New(RedactText(msg, dsn))
	}
	if k := driverKey(msg); knownKey(k) {
		return fmt.Sprintf("the driver does not accept the value of %q (see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS)", k), nil
	}
	if strings.Contains(msg, "could not match") {
		return "the numbers of hosts, hostaddr values and ports differ: give one port for all hosts or one per host", nil
	}
	return "the driver rejects it (its message is not shown, as it may quote the password)", nil
}

// driverKey is the parameter a lib/pq configuration error is about, or "".
func driverKey(msg string) string {
	m := driverKeys.FindStringSubmatch(msg)
	for i := 1; i < len(m); i++ {
		if m[i] != "" {
			return m[i]
		}
	}
	return ""
}

var driverKeys = regexp.MustCompile(`wrong value for "([a-z_]+)"|unsupported ([a-z_]+)|weak (sslmode)|(min_protocol_version) .* cannot`)

// isSecretKey is whether a parameter's value is a password.
func isSecretKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// knownKey is whether k is a connection parameter's name: only those are
// named in messages, as any other word may be a piece of a password.
func knownKey(k string) bool {
	_, ok := connParams[k]
	return ok
}

var connParams = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`host hostaddr port dbname database user password passfile
		require_auth channel_binding connect_timeout client_encoding datestyle options
		application_name fallback_application_name keepalives keepalives_idle
		keepalives_interval keepalives_count tcp_user_timeout replication gssencmode
		sslmode requiressl sslcompression sslcert sslkey sslpassword sslcertmode
		sslrootcert sslcrl sslcrldir sslsni sslnegotiation requirepeer
		ssl_min_protocol_version ssl_max_protocol_version min_protocol_version
		max_protocol_version krbsrvname gsslib gssdelegation service
		target_session_attrs load_balance_hosts search_path timezone binary_parameters
		disable_prepared_binary_result`) {
		m[k] = true
	}
	return m
}()

// settingName names a key in a message: quoted when it is a parameter's
// name, else generically.
func settingName(k string) string {
	if knownKey(k) {
		return fmt.Sprintf("%q", k)
	}
	return "a setting"
}

package run

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Redact hides the passwords of a connection URL or key=value string, for
// every message and log line rwc prints: in the user info, in password= and
// sslpassword= parameters, and in a string too malformed to parse (in a URL
// with a stray '@', everything between :// and the last '@'; in a key=value
// string, everything from the broken setting on).
func Redact(dsn string) string { return inspectDSN(dsn).redacted }

// RedactText hides dsn's passwords inside a longer text, such as a
// driver's error message: as written, percent-decoded, percent-encoded,
// Go-quoted (as url.Error and %q quote them) and quoted the way lib/pq
// quotes key=value values.
func RedactText(s, dsn string) string {
	if dsn == "" {
		return s
	}
	v := inspectDSN(dsn)
	s = strings.ReplaceAll(s, dsn, v.redacted)
	s = strings.ReplaceAll(s, quoteInner(dsn), quoteInner(v.redacted))
	for _, f := range secretForms(v.secrets) {
		s = strings.ReplaceAll(s, f, "xxxxx")
	}
	return kvPassword.ReplaceAllString(s, "${1}xxxxx")
}

// kvPassword matches password=value in a key/value text, quoted or not,
// with optional spaces around '=': the form lib/pq turns a URL into.
var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// secretForms are the ways each secret may be printed, longest first so
// that a longer form is hidden whole before a shorter one inside it.
func secretForms(secrets []string) []string {
	var forms []string
	for _, s := range secrets {
		plain := []string{s}
		if d, err := url.PathUnescape(s); err == nil {
			plain = append(plain, d)
		}
		if d, err := url.QueryUnescape(s); err == nil {
			plain = append(plain, d)
		}
		for _, p := range plain {
			forms = append(forms, p, quoteInner(p), strings.Trim(strconv.QuoteToASCII(p), `"`),
				url.QueryEscape(p), url.PathEscape(p), strings.TrimPrefix(url.UserPassword("", p).String(), ":"),
				kvEscaper.Replace(p))
		}
	}
	forms = slices.DeleteFunc(forms, func(f string) bool { return f == "" })
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(forms)
}

// kvEscaper quotes a value as lib/pq writes a URL's parts as key='value'.
var kvEscaper = strings.NewReplacer(`'`, `\'`, `\`, `\\`)

// quoteInner is s as strconv.Quote writes it, without the quotes.
func quoteInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

package run

import (
	"net/url"
	"strconv"
	"strings"
)

// urlParts is a connection URL cut where net/url (which lib/pq uses) cuts
// it: the authority ends at the first '/', '?' or '#', and its user info at
// the authority's last '@'.
type urlParts struct {
	scheme, rest               string // rest: everything after "://"
	userinfo, hostport, path   string
	query, fragment            string
	hasAt, hasQuery, hasFragmt bool
}

func splitURL(dsn string) urlParts {
	p := urlParts{}
	var ok bool
	if p.scheme, p.rest, ok = strings.Cut(dsn, "://"); !ok {
		// postgres:/h/db or postgres:h/db
		p.scheme, p.rest, _ = strings.Cut(dsn, ":")
		p.rest = strings.TrimLeft(p.rest, "/")
	}
	p.cutRest()
	return p
}

func (p *urlParts) cutRest() {
	end := strings.IndexAny(p.rest, "/?#")
	if end < 0 {
		end = len(p.rest)
	}
	auth, tail := p.rest[:end], p.rest[end:]
	p.userinfo, p.hostport, p.hasAt = "", auth, false
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		p.userinfo, p.hostport, p.hasAt = auth[:at], auth[at+1:], true
	}
	tail, p.fragment, p.hasFragmt = strings.Cut(tail, "#")
	p.path, p.query, p.hasQuery = strings.Cut(tail, "?")
}

// strayAt reports an '@' after the authority, in the path, the fragment or
// a query parameter's name: a password with a '/', '?' or '#' in it that
// ended the authority early (a parameter's value, user=a@b, may hold one).
func (p urlParts) strayAt() bool {
	if strings.Contains(p.path, "@") || strings.Contains(p.fragment, "@") {
		return true
	}
	for _, kv := range strings.Split(p.query, "&") {
		if at := strings.IndexByte(kv, '@'); at >= 0 && !strings.Contains(kv[:at], "=") {
			return true
		}
	}
	return false
}

func inspectURL(dsn string) dsnView {
	trimmed := strings.TrimSpace(dsn)
	p := splitURL(trimmed)
	v := dsnView{form: "connection URL", problem: urlProblem(dsn, trimmed, p)}
	v.secrets = p.secrets()
	if v.problem == "" {
		v.redacted = redactCleanURL(trimmed)
	}
	if v.redacted == "" {
		v.redacted = p.redactBroken()
	}
	return v
}

// Messages name the part that is wrong and say how to fix it.
const (
	msgPercentEncode = "percent-encode the password (e.g. %40 for @, %2F for /, %3F for ?, %23 for #, %25 for %, %22 for \", %20 for a space)"
	msgUserinfo      = "the user info (user:password before @) has a character that must be percent-encoded (\" # % / ? @ [ ] \\ ^ ` { | } < >, a space, a tab or a non-ASCII letter); " + msgPercentEncode
	msgStrayAt       = "the user info (user:password before @) has a character that must be percent-encoded: a '/', '?' or '#' in the password ends the host part early; " + msgPercentEncode
	msgUserPercent   = "the user info (user:password before @) has a '%' that does not start a percent-encoding (%XX); write a % in the password as %25"
	msgAuthHint      = " (a '/', '?', '#' or '@' in the password must be percent-encoded: %2F %3F %23 %40)"
	msgHost          = "the host has a character that is not allowed in a host name (give a name, an IPv4 address or an [IPv6] address)" + msgAuthHint
	msgPort          = "the port is not a number from 1 to 65535 (for several hosts, give ?port=5432,5433)" + msgAuthHint
	msgPath          = "the database name (after the host's /) has a '%' not followed by two hex digits (write a % as %25) or a control character (a tab or a line break)"
	msgFragment      = "it has a '#', where a URL ends: percent-encode a '#' in the password or in a parameter as %23"
	msgSpace         = "it has white space or a line break at its start or end: remove it"
	msgScheme        = "the scheme must be postgres:// or postgresql:// (in lower case, with two slashes)"
	msgURLOther      = "it does not parse as a URL; " + msgPercentEncode
)

func urlProblem(dsn, trimmed string, p urlParts) string {
	switch {
	case trimmed != dsn:
		return msgSpace
	case !strings.HasPrefix(trimmed, p.scheme+"://") || (p.scheme != "postgres" && p.scheme != "postgresql"):
		return msgScheme
	case p.strayAt():
		return msgStrayAt
	}
	if m := userinfoProblem(p.userinfo); m != "" {
		return m
	}
	if m := hostPortProblem(p.hostport); m != "" {
		return m
	}
	if !validEscapes(p.path, printable) {
		return msgPath
	}
	if m := queryProblem(p.query); m != "" {
		return m
	}
	if p.hasFragmt {
		return msgFragment
	}
	if _, err := url.Parse(trimmed); err != nil {
		return msgURLOther
	}
	return ""
}

func userinfoProblem(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%':
			if !hexEscape(s[i:]) {
				return msgUserPercent
			}
		case !unreserved(c) && !strings.ContainsRune("!$&'()*+,;=:@", rune(c)):
			return msgUserinfo
		}
	}
	return ""
}

// hostPortProblem checks the authority's hosts, each with an optional
// port: libpq's URLs list several, separated by commas.
func hostPortProblem(hp string) string {
	for _, one := range strings.Split(hp, ",") {
		if p := onePortProblem(one); p != "" {
			return p
		}
	}
	return ""
}

func onePortProblem(hp string) string {
	host, port := hp, ""
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 || strings.Trim(hp[1:end], "0123456789abcdefABCDEF:.") != "" {
			return msgHost
		}
		host, port = "", hp[end+1:]
		if port != "" && port[0] != ':' {
			return msgPort
		}
	} else if i := strings.IndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i:]
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !unreserved(c) {
			return msgHost
		}
	}
	if port = strings.TrimPrefix(port, ":"); port == "" {
		return ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strings.Trim(port, "0123456789") != "" {
		return msgPort
	}
	return ""
}

func queryProblem(q string) string {
	for _, kv := range strings.Split(q, "&") {
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		name := "a query parameter"
		if dk, err := url.QueryUnescape(k); err == nil && knownKey(dk) {
			name = "the query parameter " + strconv.Quote(dk)
		}
		if !ok {
			return "a query parameter has no '=': write ?key=value&key=value, and percent-encode '&', '#' and '%' in a value such as the password (%26, %23, %25)"
		}
		if !validEscapes(k, printable) || !validEscapes(val, printable) {
			return name + " has a '%' not followed by two hex digits (write a % as %25) or a control character (a tab or a line break)"
		}
	}
	return ""
}

func validEscapes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && !hexEscape(s[i:]) || !ok(s[i]) {
			return false
		}
	}
	return true
}

// printable is a byte a URL's path or query may hold as it is.
func printable(c byte) bool { return c >= 0x20 && c != 0x7f }

func hexEscape(s string) bool {
	return len(s) >= 3 && s[0] == '%' && isHex(s[1]) && isHex(s[2])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// redactCleanURL hides the passwords of a well-formed URL; "" when it does
// not parse after all.
func redactCleanURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q, changed := u.Query(), false
	for k := range q {
		if isSecretKey(k) {
			q[k], changed = []string{"xxxxx"}, true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactBroken hides what may be a password in a URL too malformed to
// trust its parts: with a stray '@' (see strayAt), everything between ://
// and the last '@', as the password may hold '@' and '/'; else the user
// info's password, a port that is no number when there is no user info
// (it may be a password whose '@' is missing) and what follows it, and
// every query parameter from the first password on (its value may hold
// '&'), and the fragment.
func (p urlParts) redactBroken() string {
	var b strings.Builder
	b.WriteString(p.scheme + "://")
	q, hasAt := p, p.hasAt
	switch {
	case p.strayAt():
		q.rest = p.rest[strings.LastIndexByte(p.rest, '@')+1:]
		q.cutRest()
		b.WriteString("xxxxx@")
		hasAt = true
	case p.hasAt:
		b.WriteString(redactUserinfo(p.userinfo) + "@")
	}
	if !hasAt && hostPortProblem(q.hostport) == msgPort {
		host, _, _ := strings.Cut(q.hostport, ":")
		return b.String() + host + ":xxxxx"
	}
	b.WriteString(q.hostport + q.path)
	if q.hasQuery {
		b.WriteString("?" + redactQuery(q.query))
	}
	if q.hasFragmt {
		b.WriteString("#xxxxx")
	}
	return b.String()
}

func redactUserinfo(ui string) string {
	if userinfoProblem(ui) != "" {
		return "xxxxx"
	}
	if user, _, ok := strings.Cut(ui, ":"); ok {
		return user + ":xxxxx"
	}
	return ui
}

// redactQuery keeps the parameters before the first password one.
func redactQuery(q string) string {
	kvs := strings.Split(q, "&")
	for i, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		if isSecretKey(k) || isSecretKey(unescapeOr(k)) {
			return strings.Join(append(kvs[:i:i], k+"=xxxxx"), "&")
		}
	}
	return q
}

// secrets are the passwords as written, and, in a URL with a stray '@',
// what may be one.
func (p urlParts) secrets() []string {
	var s []string
	if _, pw, ok := strings.Cut(p.userinfo, ":"); ok {
		s = append(s, pw)
	}
	if p.strayAt() {
		blob := p.rest[:strings.LastIndexByte(p.rest, '@')]
		_, pw, _ := strings.Cut(blob, ":")
		s = append(s, blob, pw)
	}
	rest := p.query
	if p.hasFragmt {
		rest += "#" + p.fragment
	}
	for i := 0; i < len(rest); {
		kv, _, _ := strings.Cut(rest[i:], "&")
		if k, v, ok := strings.Cut(kv, "="); ok && (isSecretKey(k) || isSecretKey(unescapeOr(k))) {
			s = append(s, v, rest[i+len(k)+1:])
		}
		i += len(kv) + 1
	}
	return s
}

func unescapeOr(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

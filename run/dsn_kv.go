package run

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// kvPair is one key=value setting; start and end delimit its value as
// written (quotes and backslashes included).
type kvPair struct {
	key, val   string
	start, end int
}

// kvParse is a key=value string read as lib/pq's fromDSN reads it. When it
// is malformed, bad is where the broken setting starts, badKey its key (""
// when it has none) and badVal where its value starts (-1 when unknown).
type kvParse struct {
	pairs       []kvPair
	problem     string
	bad, badVal int
	badKey      string
}

type kvScan struct {
	s    string
	i    int
	last int // where the rune next returned starts
}

func (sc *kvScan) next() (rune, bool) {
	if sc.i >= len(sc.s) {
		return 0, false
	}
	r, n := utf8.DecodeRuneInString(sc.s[sc.i:])
	sc.last, sc.i = sc.i, sc.i+n
	return r, true
}

func (sc *kvScan) skipSpaces() (rune, bool) {
	r, ok := sc.next()
	for ok && unicode.IsSpace(r) {
		r, ok = sc.next()
	}
	return r, ok
}

func parseKV(s string) kvParse {
	sc := &kvScan{s: s}
	var kp kvParse
	for {
		r, ok := sc.skipSpaces()
		if !ok {
			return kp
		}
		kp.bad, kp.badVal, kp.badKey = sc.last, -1, ""
		key, r, ok := sc.key(r)
		if r != '=' {
			r, ok = sc.skipSpaces()
		}
		if r != '=' || !ok {
			// The word after a password with no '=' may be the password.
			kp.problem, kp.badKey, kp.badVal = kvMissingEq(kp.pairs), key, kp.bad+len(key)
			return kp
		}
		kp.badKey = key
		if r, ok = sc.skipSpaces(); !ok {
			// libpq: a key at the end with nothing after '=' is empty.
			kp.pairs = append(kp.pairs, kvPair{key: key, start: len(s), end: len(s)})
			return kp
		}
		kp.badVal = sc.last
		val, end, problem := sc.value(r)
		if problem != "" {
			kp.problem = fmt.Sprintf(problem, settingName(key))
			return kp
		}
		if key == "" {
			kp.problem = "a key=value setting has no key before its '='"
			return kp
		}
		kp.pairs = append(kp.pairs, kvPair{key: key, val: val, start: kp.badVal, end: end})
	}
}

// key scans a key from its first rune r; it returns the rune after it.
func (sc *kvScan) key(r rune) (string, rune, bool) {
	start, ok := sc.last, true
	for ok && !unicode.IsSpace(r) && r != '=' {
		r, ok = sc.next()
	}
	end := sc.last
	if !ok {
		end = len(sc.s)
	}
	return sc.s[start:end], r, ok
}

// value scans a value from its first rune r; end is where it ends.
func (sc *kvScan) value(r rune) (val string, end int, problem string) {
	if r == '\'' {
		return sc.quoted()
	}
	var b strings.Builder
	for ok := true; ok && !unicode.IsSpace(r); {
		if r == '\\' {
			if r, ok = sc.next(); !ok {
				return "", 0, "the value of %s ends with a backslash: write a \\ in a value as \\\\, or quote the value"
			}
		}
		b.WriteRune(r)
		end = sc.i
		r, ok = sc.next()
	}
	return b.String(), end, ""
}

func (sc *kvScan) quoted() (string, int, string) {
	var b strings.Builder
	for {
		r, ok := sc.next()
		if !ok {
			return "", 0, "the value of %s has an unterminated single quote: end it with ' (inside quotes write a ' as \\' and a \\ as \\\\)"
		}
		switch r {
		case '\'':
			return b.String(), sc.i, ""
		case '\\':
			r, _ = sc.next()
		}
		b.WriteRune(r)
	}
}

func kvMissingEq(before []kvPair) string {
	where := " at the start"
	if n := len(before); n > 0 {
		where = " after a setting"
		if k := before[n-1].key; knownKey(k) {
			where = fmt.Sprintf(" after the %q setting", k)
		}
	}
	return "a key=value setting has no '='" + where + ": write a postgres:// URL, or key=value settings separated by spaces, single-quoting a value with spaces or quotes in it (password='a b')"
}

func inspectKV(dsn string) dsnView {
	kp := parseKV(dsn)
	v := dsnView{form: "connection string", problem: kp.problem}
	end := len(dsn)
	if kp.problem != "" {
		end = kp.bad
	}
	var b strings.Builder
	at := 0
	for _, p := range kp.pairs {
		if isSecretKey(p.key) {
			b.WriteString(dsn[at:p.start] + "xxxxx")
			at = p.end
			v.secrets = append(v.secrets, p.val, dsn[p.start:p.end])
		}
	}
	b.WriteString(dsn[at:end])
	if kp.problem != "" {
		b.WriteString("…")
		v.secrets = append(v.secrets, kp.brokenSecret(dsn))
	}
	v.redacted = strings.TrimSpace(b.String())
	return v
}

// brokenSecret is what may be the rest of a password when the setting
// that broke is one, or follows one (an unquoted password with a space).
func (kp kvParse) brokenSecret(dsn string) string {
	if isSecretKey(kp.badKey) && kp.badVal >= 0 {
		return strings.TrimSpace(dsn[kp.badVal:])
	}
	if n := len(kp.pairs); n > 0 && isSecretKey(kp.pairs[n-1].key) {
		return dsn[kp.pairs[n-1].start:]
	}
	return ""
}

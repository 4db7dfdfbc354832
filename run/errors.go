package run

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile"
	"github.com/rwc-dev/rwc/diag"
)

// QueryError is a PostgreSQL error raised by a flow's query, positioned in
// the spec file.
type QueryError struct {
	Flow string
	Pos  diag.Pos
	PG   *pq.Error
}

func (e *QueryError) Error() string {
	msg := fmt.Sprintf("%s: flow %s: the query failed: %s (SQLSTATE %s)", e.Pos, e.Flow, e.PG.Message, e.PG.Code)
	if e.PG.Detail != "" {
		msg += "; " + e.PG.Detail
	}
	if e.PG.Hint != "" {
		msg += "; hint: " + e.PG.Hint
	}
	return msg + "; " + unchanged
}

// unchanged is what a failed refresh left, as most failures leave it.
const unchanged = "the refresh was rolled back and the target is unchanged"

func (e *QueryError) Unwrap() error { return e.PG }

// serverRefused is a refresh's server error that no step put in rwc's
// words (a privilege the role lacks, a disk full, a partition someone made
// meanwhile): the server's message and SQLSTATE instead of the driver's
// "pq: …", and what the refresh left.
type serverRefused struct {
	err error
	msg string
}

func (e *serverRefused) Error() string { return e.msg }
func (e *serverRefused) Unwrap() error { return e.err }

// inServerWords is err as serverRefused says it, when err still reads as
// the driver's (after: what the refresh left).
func inServerWords(err error, after string) error {
	var pe *pq.Error
	if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), pe.Error()) {
		return err
	}
	msg := strings.Replace(err.Error(), pe.Error(), "the server refused it: "+serverWords(pe), 1)
	if !strings.Contains(msg, "rolled back") {
		msg += "; " + after
	}
	return &serverRefused{err: err, msg: msg}
}

// ConnectProblem says why a session could not be opened, in rwc's words:
// the server's message with its SQLSTATE and what to check, rather than
// the driver's "pq: …".
func ConnectProblem(err error) string {
	if errors.Is(err, pq.ErrSSLNotSupported) {
		return "the server does not accept SSL connections, and the connection's sslmode (require, verify-ca or verify-full: from the connection string, the service or PGSSLMODE) demands one: enable SSL on the server, or connect with sslmode=prefer (libpq's default, which rwc uses when nothing sets sslmode) or sslmode=disable"
	}
	return serverProblem("the server refused the session", err, connectHints)
}

// StateProblem says why rwc's state schema could not be read, created or
// upgraded, as ConnectProblem does.
func StateProblem(err error) string {
	return serverProblem("rwc's state schema (schema rwc) cannot be set up", err, map[string]string{
		"42501": "the role rwc connects as needs CREATE on the database, or to own a schema rwc: see docs/least-privilege.md",
		"25006": "the session is read-only (default_transaction_read_only, or a standby): point rwc at the primary",
	})
}

// StateDamage is a state schema that is not what its version says: a
// table, a column, a key or an index rwc relies on is missing or altered,
// or the version number is wrong. Nothing runs on it: PostgreSQL's
// "relation … does not exist" halfway through a refresh, or a migration
// tripping over what is already there, would say neither what is wrong
// nor what to do.
type StateDamage struct {
	// Version is what rwc.schema_version says (-1: nothing readable).
	Version  int
	Problems []string
}

// stateRepairHint is what to do about a damaged state.
const stateRepairHint = "run rwc state check to see what is wrong, and rwc state repair to recreate rwc's bookkeeping (it never touches a target's rows)"

func (e *StateDamage) Error() string {
	ps := e.Problems
	more := ""
	if len(ps) > 6 {
		ps, more = ps[:6], fmt.Sprintf("; and %d more", len(ps)-6)
	}
	return fmt.Sprintf("rwc's state (schema rwc) is damaged: %s%s; nothing was changed: %s", strings.Join(ps, "; "), more, stateRepairHint)
}

// damage is the StateDamage of a state whose rwc.schema_version says
// version (noVersion: nothing) and whose schema has problems.
func damage(version int, problems []schemaProblem) error {
	e := &StateDamage{Version: version}
	newer := false
	for _, p := range problems {
		e.Problems = append(e.Problems, p.text)
		newer = newer || p.code == "newer_object"
	}
	if newer {
		e.Problems = append([]string{fmt.Sprintf("rwc.schema_version says version %d, but the schema has what later versions added", version)}, e.Problems...)
	}
	if len(e.Problems) == 0 {
		e.Problems = []string{"rwc.schema_version is missing or unreadable"}
	}
	return e
}

// StateReadProblem says why rwc state check or repair could not read or
// change rwc's state, as StateProblem does.
func StateReadProblem(err error) string {
	var re *RepairError
	if errors.As(err, &re) {
		return re.Error() // names the step
	}
	return serverProblem("rwc's state (schema rwc) cannot be checked or repaired", err, map[string]string{
		"42501": "the role rwc connects as needs to own schema rwc and its tables (or their privileges): see docs/least-privilege.md",
		"25006": "the session is read-only (default_transaction_read_only, or a standby): point rwc at the primary",
	})
}

func serverProblem(what string, err error, hints map[string]string) string {
	var lte *LockTimeoutError
	if errors.As(err, &lte) {
		return lte.Error() // names the table and the session holding it
	}
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	msg := what + ": " + serverWords(err)
	if hint, ok := hints[string(pe.Code)]; ok {
		msg += "; " + hint
	}
	return msg
}

// serverWords is the server's message of err and its SQLSTATE, without
// the driver's "pq:" (err's own text when it is not the server's).
func serverWords(err error) string {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
}

var connectHints = map[string]string{
	"28P01": "check the user and password in the connection string (or the password file)",
	"28000": "the server's pg_hba.conf has no entry for this user, database and address, or wants SSL (sslmode=require)",
	"3D000": "check the database name in the connection string",
	"42501": "the user may not connect to this database: GRANT CONNECT ON DATABASE to it",
	"53300": "the server has no free connection slots: try again, or raise max_connections",
	"57P03": "the server is starting up or shutting down: try again",
	// A startup parameter the server does not know: rwc's
	// client_connection_check_interval on a server older than 14.
	"42704": "rwc needs PostgreSQL 14 or newer, and starts every session with client_connection_check_interval; or the connection string's options name a parameter this server lacks",
}

var quotedName = regexp.MustCompile(`"([^"]+)"`)

// queryError positions a PostgreSQL error inside the flow's query. The
// statement rwc ran wraps (and may have rewritten) the query, so PostgreSQL's
// cursor cannot be mapped back directly; the name the error quotes (a
// relation, a column, a function) is looked up in the query as written, and
// otherwise the error points at the query's start.
func queryError(f *compile.Flow, err error) error {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err
	}
	if kv := keyViolation(f, pe); kv != nil {
		return kv
	}
	q := f.Table.Query
	pos := q.AtOffset(0) // the query's first character, not the `|` of its block
	if m := quotedName.FindStringSubmatch(pe.Message); m != nil {
		if i := nameOffset(f, m[1], pe.Code == "42P01"); i >= 0 {
			pos = q.AtOffset(i)
		}
	}
	return &QueryError{Flow: f.Name(), Pos: pos, PG: pe}
}

// nameOffset is the byte offset in f's query of the name an error quotes, or
// -1. A missing relation is looked up among the tables the query reads;
// otherwise the name must stand as a whole identifier, so that relation
// "visit" does not point at a column visit_date.
func nameOffset(f *compile.Flow, name string, relation bool) int {
	rel, schema := name, ""
	if dot := strings.LastIndexByte(name, '.'); dot >= 0 {
		schema, rel = name[:dot], name[dot+1:]
	}
	if relation && f.Query != nil {
		for _, t := range f.Query.Tables {
			if strings.EqualFold(t.Name, rel) && (schema == "" || strings.EqualFold(t.Schema, schema)) {
				return t.Offset
			}
		}
	}
	for _, n := range []string{name, rel} {
		if i := identIndex(f.Table.Query.Value, n); i >= 0 {
			return i
		}
	}
	return -1
}

// identIndex finds name in s, ignoring ASCII case, where it is not part of
// a longer identifier.
func identIndex(s, name string) int {
	isIdent := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	for i := 0; name != "" && i+len(name) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(name)], name) &&
			(i == 0 || !isIdent(s[i-1])) && (i+len(name) == len(s) || !isIdent(s[i+len(name)])) {
			return i
		}
	}
	return -1
}

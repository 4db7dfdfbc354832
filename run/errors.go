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
	return msg + "; the refresh was rolled back and the target is unchanged"
}

func (e *QueryError) Unwrap() error { return e.PG }

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
	q := f.Table.Query
	pos := q.Pos
	if m := quotedName.FindStringSubmatch(pe.Message); m != nil {
		name := m[1]
		if i := strings.Index(strings.ToLower(q.Value), strings.ToLower(name)); i >= 0 {
			pos = q.AtOffset(i)
		} else if dot := strings.LastIndexByte(name, '.'); dot >= 0 {
			if i := strings.Index(strings.ToLower(q.Value), strings.ToLower(name[dot+1:])); i >= 0 {
				pos = q.AtOffset(i)
			}
		}
	}
	return &QueryError{Flow: f.Name(), Pos: pos, PG: pe}
}

package run

import (
	"context"
	"database/sql"

	"github.com/rwc-dev/rwc/run/session"
)

// userRows runs a statement that embeds a user's query, so that the server
// reads exactly the one statement rwc lint read: under the parser's
// settings, put back first in case a function an earlier statement called
// changed them, and through the extended protocol, whose Parse message
// refuses more than one statement (the simple protocol would run them
// all). done closes the rows and the statement.
func userRows(ctx context.Context, tx *sql.Tx, stmt string) (rows *sql.Rows, done func(), err error) {
	st, err := prepareUser(ctx, tx, stmt)
	if err != nil {
		return nil, nil, err
	}
	if rows, err = st.QueryContext(ctx); err != nil {
		st.Close()
		return nil, nil, err
	}
	return rows, func() { rows.Close(); st.Close() }, nil
}

// userExec is userRows for a statement whose rows are not read.
func userExec(ctx context.Context, tx *sql.Tx, stmt string) (sql.Result, error) {
	st, err := prepareUser(ctx, tx, stmt)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.ExecContext(ctx)
}

func prepareUser(ctx context.Context, tx *sql.Tx, stmt string) (*sql.Stmt, error) {
	if _, err := tx.ExecContext(ctx, session.Reassert); err != nil {
		return nil, err
	}
	return tx.PrepareContext(ctx, stmt)
}

package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/compile/databricks"
	"github.com/rwc-dev/rwc/spec/pgtype"
)

// DescribeQuery returns the output columns of a query and the PostgreSQL
// types the server gives them, planning it in a read-only transaction that
// reads no row (rwc import types a table declared without a column list
// this way).
func DescribeQuery(ctx context.Context, db *sql.DB, query string) ([]databricks.Column, error) {
	tx, err := readOnly(ctx, db, 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	d, err := describeIn(ctx, tx, query, nil)
	if err != nil {
		return nil, plainError(err)
	}
	var cols []databricks.Column
	for _, t := range d.columns {
		name, err := typeName(t)
		if err != nil {
			return nil, fmt.Errorf("column %s: %v", t.Name(), err)
		}
		cols = append(cols, databricks.Column{Name: t.Name(), Type: name})
	}
	return cols, nil
}

// wireTypes maps the driver's type names to PostgreSQL's.
var wireTypes = map[string]string{
	"INT8": "bigint", "INT4": "integer", "INT2": "smallint", "NUMERIC": "numeric", "FLOAT8": "double precision",
	"FLOAT4": "real", "TEXT": "text", "VARCHAR": "varchar", "BPCHAR": "char", "BOOL": "boolean", "DATE": "date",
	"TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz", "UUID": "uuid", "JSONB": "jsonb", "JSON": "json",
	"BYTEA": "bytea", "INTERVAL": "interval", "TIME": "time", "INET": "inet",
}

func typeName(t *sql.ColumnType) (string, error) {
	db := t.DatabaseTypeName()
	array := strings.HasPrefix(db, "_")
	base, ok := wireTypes[strings.TrimPrefix(db, "_")]
	if !ok {
		return "", fmt.Errorf("type %s has no column type rwc declares: cast it in the query", strings.ToLower(db))
	}
	if p, s, ok := t.DecimalSize(); ok && base == "numeric" && p >= 1 && p <= 1000 {
		base = fmt.Sprintf("numeric(%d,%d)", p, s)
	}
	if n, ok := t.Length(); ok && (base == "varchar" || base == "char") && n > 0 && n < 1<<20 {
		base = fmt.Sprintf("%s(%d)", base, n)
	}
	if array {
		base += "[]"
	}
	pt, err := pgtype.Parse(base)
	if err != nil {
		return "", err
	}
	return pt.Canonical, nil
}

// plainError is the server's message without the driver's prefix.
func plainError(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) {
		return errors.New(pe.Message)
	}
	return err
}

package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/rwc-dev/rwc/diag"
	"github.com/rwc-dev/rwc/spec"
	"github.com/rwc-dev/rwc/spec/pgtype"
	"github.com/rwc-dev/rwc/spec/predicate"
)

// Index is one index rwc keeps on a flow's target: one of indexes:, the
// primary key, or the default index on the partition column.
type Index struct {
	// Name is derived from the target, the columns and the whole
	// definition (IndexName): an index whose definition changes gets
	// another name, so the catalog's names say what is built.
	Name     string
	Columns  []string
	Unique   bool
	Primary  bool
	Using    string // btree, brin, hash, gin
	Where    string // the partial index's predicate, CEL ("": none)
	WhereSQL string
	// Default: no indexes: key, so rwc indexes the partition column.
	Default bool
	// OnPartitioned: the index is a partitioned target's (partitioning:),
	// which its name says too (IndexName): a plain target renamed aside
	// keeps its indexes' names, and the partitioned target that replaces
	// it must not collide with them.
	OnPartitioned bool
	Pos           diag.Pos
}

// Indexes are the indexes f's target has when rwc has done its work: the
// primary key first, then indexes: in order (or the default index).
func (f *Flow) Indexes() []Index { return f.indexes }

// indexNameSuffix marks an index rwc created: _rwc_ and eight hex digits
// of the definition's hash. rwc drops only indexes so named.
var indexNameSuffix = regexp.MustCompile(`_rwc_[0-9a-f]{8}$`)

// IsRWCIndex reports whether an index's name is one rwc gives (IndexName).
func IsRWCIndex(name string) bool { return indexNameSuffix.MatchString(name) }

// IndexName is the name of an index of table: the table and the columns,
// cut to fit PostgreSQL's 63 bytes, then _rwc_ and a hash of the whole
// definition, so that two definitions never share a name. Spec names are
// lower-case ASCII (the JSON Schema's pattern): cutting bytes cuts
// characters.
func IndexName(table string, ix Index) string {
	def := fmt.Sprintf("table=%s;primary=%t;unique=%t;using=%s;columns=%s;where=%s",
		table, ix.Primary, ix.Unique, ix.Using, strings.Join(ix.Columns, ","), ix.WhereSQL)
	if ix.OnPartitioned {
		def += ";partitioned"
	}
	h := sha256.Sum256([]byte(def))
	suffix := "_rwc_" + hex.EncodeToString(h[:4])
	base := table + "_" + strings.Join(ix.Columns, "_")
	if ix.Primary {
		base = table + "_pkey"
	}
	if len(base) > 63-len(suffix) {
		base = base[:63-len(suffix)]
	}
	return base + suffix
}

// analyzeIndexes checks the table's primary key and indexes and records
// the indexes its target gets (Flow.Indexes).
func (f *Flow) analyzeIndexes() diag.List {
	t := f.Table
	var ds diag.List
	if t.PrimaryKey != nil {
		ix := Index{Columns: t.PrimaryKey.Columns, Unique: true, Primary: true, Using: "btree", Pos: t.PrimaryKey.Pos}
		ds = append(ds, f.addIndex(ix, nil)...)
	}
	for i := range t.Indexes {
		decl := &t.Indexes[i]
		ix := Index{Columns: decl.Columns, Unique: decl.Unique, Using: decl.Using, Pos: decl.Pos}
		if ix.Using == "" {
			ix.Using = spec.IndexMethods[0]
		}
		ds = append(ds, f.addIndex(ix, decl)...)
	}
	if !t.IndexesDeclared && f.PartitionBy != "" && !f.primaryLeadsWith(f.PartitionBy) {
		c := t.Column(f.PartitionBy)
		if c != nil && MethodSupports("btree", c.Type) {
			ix := Index{Columns: []string{f.PartitionBy}, Using: "btree", Default: true, Pos: t.Pos, OnPartitioned: t.Partitioning != nil}
			ix.Name = IndexName(t.Name, ix)
			f.indexes = append(f.indexes, ix)
		}
	}
	return ds
}

// primaryLeadsWith: the primary key's index starts with col, and so
// serves a window on it as the default index would.
func (f *Flow) primaryLeadsWith(col string) bool {
	pk := f.Table.PrimaryKey
	return pk != nil && len(pk.Columns) > 0 && pk.Columns[0] == col
}

// addIndex checks one index (decl: its entry in indexes:, nil for the
// primary key) and adds it when it can be built.
func (f *Flow) addIndex(ix Index, decl *spec.Index) diag.List {
	var ds diag.List
	for _, c := range ix.Columns {
		if f.Table.Column(c) == nil {
			return nil // RW122, from the loader
		}
	}
	ds = append(ds, f.checkMethod(ix)...)
	if decl != nil && decl.Where.Value != "" {
		where, wd := f.indexWhere(decl.Where)
		ds = append(ds, wd...)
		if where == nil {
			return ds
		}
		ix.Where, ix.WhereSQL = where.Root.CEL(), mustSQL(where)
	}
	if ds.HasErrors() {
		return ds
	}
	if ix.Unique {
		ds = append(ds, f.keyCoversWindow(ix)...)
	}
	ix.OnPartitioned = f.Table.Partitioning != nil
	ix.Name = IndexName(f.Table.Name, ix)
	for _, other := range f.indexes {
		if other.Name == ix.Name {
			ds.Errorf("RW124", ix.Pos, fmt.Sprintf("remove one of them; the first is at %s", other.Pos), "this index is declared twice: %s", ix.Describe())
			return ds
		}
	}
	f.indexes = append(f.indexes, ix)
	return ds
}

// indexWhere compiles a partial index's predicate. An index predicate
// must give the same answer for a row forever (PostgreSQL requires it to
// be immutable, and current_date() there would freeze at creation).
func (f *Flow) indexWhere(text spec.Text) (*predicate.Predicate, diag.List) {
	p, ds := compilePredicate(text, f.Table)
	if p != nil && p.Determinism != predicate.Immutable {
		ds.Errorf("RW214", text.Pos, "write fixed values, e.g. "+orColumn(f.PartitionBy, "d")+" >= date('2026-01-01'); an index's predicate holds for a row forever",
			"an index's where must not depend on when it runs (current_date(), current_timestamp(), rand())")
		return nil, ds
	}
	return p, ds
}

func orColumn(col, fallback string) string {
	if col == "" {
		return fallback
	}
	return col
}

func mustSQL(p *predicate.Predicate) string {
	s, err := p.SQL(nil)
	if err != nil {
		return "false" // unreachable: an immutable predicate renders
	}
	return s
}

// checkMethod refuses an index its access method cannot build.
func (f *Flow) checkMethod(ix Index) diag.List {
	var ds diag.List
	what := "using: " + ix.Using
	if ix.Primary {
		what = "a primary key"
	}
	switch {
	case ix.Unique && ix.Using != "btree":
		ds.Errorf("RW123", ix.Pos, "remove using: (unique indexes are btree), or unique: true", "a unique index must use btree, not %s: PostgreSQL builds unique indexes only with btree", ix.Using)
		return ds
	case ix.Using == "hash" && len(ix.Columns) > 1:
		ds.Errorf("RW123", ix.Pos, "index one column with hash, or use btree for several", "a hash index covers one column, and this one names %d", len(ix.Columns))
		return ds
	}
	for _, name := range ix.Columns {
		c := f.Table.Column(name)
		if !MethodSupports(ix.Using, c.Type) {
			ds.Errorf("RW123", ix.Pos, methodHint(ix.Using, c.Type), "%s cannot index column %s: PostgreSQL has no %s operator class for %s", what, name, ix.Using, c.Type.Canonical)
		}
	}
	return ds
}

func methodHint(using string, t pgtype.Type) string {
	switch {
	case using == "gin":
		return "gin indexes arrays, jsonb and tsvector; use btree for " + t.Canonical
	case methodFor(t) == "":
		return "PostgreSQL cannot index a " + t.Base + " column with any of rwc's methods; leave it out of the index"
	}
	return "use " + methodFor(t) + " for " + t.Canonical
}

func methodFor(t pgtype.Type) string {
	for _, m := range []string{"btree", "gin", "hash", "brin"} {
		if MethodSupports(m, t) {
			return m
		}
	}
	return ""
}

// MethodSupports reports whether PostgreSQL 15 has a default operator
// class of method for t (a test checks this against pg_opclass by
// building each index).
func MethodSupports(method string, t pgtype.Type) bool {
	base := t.Base
	if base == "json" || base == "xml" {
		return false
	}
	switch method {
	case "btree":
		return true
	case "hash":
		return t.Array || !slices.Contains([]string{"bit", "bit varying", "money", "tsvector"}, base)
	case "brin":
		return !t.Array && !slices.Contains([]string{"boolean", "jsonb", "money", "tsvector"}, base)
	case "gin":
		return t.Array || base == "jsonb" || base == "tsvector"
	}
	return false
}

// keyCoversWindow warns about a unique key that leaves out a column the
// window ranges over: a row the window recomputes may then collide with a
// row of the same key outside the window (history), which the refresh
// does not delete, and the refresh fails. With every such column in the
// key, rows of one key are all in the window or all outside it.
func (f *Flow) keyCoversWindow(ix Index) diag.List {
	var ds diag.List
	if f.Predicate == nil {
		return nil
	}
	var missing []string
	for _, c := range f.Predicate.Columns {
		if !slices.Contains(ix.Columns, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	key, list := "unique index", "columns"
	if ix.Primary {
		key, list = "primary key", "primary_key"
	}
	ds.Warnf("RW406", ix.Pos,
		fmt.Sprintf("add %s to the key (%s: [%s]); if a key's rows never leave the window's range (an order keeps its date), acknowledge it: # rwc:nolint RW406",
			joinNames(missing), list, strings.Join(append(slices.Clone(ix.Columns), missing...), ", ")),
		"the %s (%s) does not include %s, which the window ranges over: a row the window recomputes can collide with a row of the same key outside the window, which the refresh keeps, and the refresh then fails",
		key, strings.Join(ix.Columns, ", "), joinNames(missing))
	return ds
}

// Describe is the index as the plan shows it: `(d, k) unique btree where …`.
func (ix Index) Describe() string {
	var b strings.Builder
	b.WriteString("(" + strings.Join(ix.Columns, ", ") + ")")
	switch {
	case ix.Primary:
		b.WriteString(" primary key")
	case ix.Unique:
		b.WriteString(" unique")
	}
	if ix.Using != "btree" {
		b.WriteString(" using " + ix.Using)
	}
	if ix.Where != "" {
		b.WriteString(" where " + ix.Where)
	}
	return b.String()
}

// quotedColumns is the index's column list, quoted.
func (ix Index) quotedColumns() string {
	cols := make([]string, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = pq.QuoteIdentifier(c)
	}
	return strings.Join(cols, ", ")
}

// CreateSQL builds the index on f's target: in the transaction that
// creates the target (concurrently false), or with CREATE INDEX
// CONCURRENTLY on a target that exists, which must run outside any
// transaction block. A primary key on an existing target is a unique index
// built concurrently, then attached as the key (AttachSQL).
func (f *Flow) CreateSQL(ix Index, concurrently bool) string {
	name := pq.QuoteIdentifier(ix.Name)
	if ix.Primary && !concurrently {
		return fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY (%s)", f.Target(), name, ix.quotedColumns())
	}
	verb := "CREATE INDEX"
	if ix.Unique {
		verb = "CREATE UNIQUE INDEX"
	}
	if concurrently {
		verb += " CONCURRENTLY"
	}
	s := fmt.Sprintf("%s %s ON %s USING %s (%s)", verb, name, f.Target(), ix.Using, ix.quotedColumns())
	if ix.WhereSQL != "" {
		s += " WHERE " + ix.WhereSQL
	}
	return s
}

// attachSQL makes a unique index built concurrently the primary key. It
// takes ACCESS EXCLUSIVE briefly, and sets the key's columns NOT NULL,
// which scans the table under that lock.
func (f *Flow) attachSQL(ix Index) string {
	name := pq.QuoteIdentifier(ix.Name)
	return fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY USING INDEX %s", f.Target(), name, name)
}

// dropSQL drops an index rwc created. A primary key is a constraint: it
// is dropped with ALTER TABLE, and its columns made nullable again, as rwc
// creates every column.
func (f *Flow) dropSQL(ix CatalogIndex) string {
	if ix.Primary {
		s := fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", f.Target(), pq.QuoteIdentifier(ix.Name))
		for _, c := range ix.Columns {
			s += fmt.Sprintf(", ALTER COLUMN %s DROP NOT NULL", pq.QuoteIdentifier(c))
		}
		return s
	}
	return "DROP INDEX CONCURRENTLY IF EXISTS " + pq.QuoteIdentifier(f.Table.Pipeline.Schema) + "." + pq.QuoteIdentifier(ix.Name)
}

// CreateIndexes builds every index of a target just created, in its
// transaction.
func (f *Flow) CreateIndexes() []string {
	var out []string
	for _, ix := range f.indexes {
		out = append(out, f.CreateSQL(ix, false))
	}
	return out
}

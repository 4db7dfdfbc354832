package pgtest

import (
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func currentDB(t *testing.T, db *sql.DB) string {
	t.Helper()
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// Two DBs in one test are distinct and do not see each other's tables.
func TestDistinctAndIsolated(t *testing.T) {
	db1, dsn1 := DB(t)
	db2, dsn2 := DB(t)
	if dsn1 == dsn2 || currentDB(t, db1) == currentDB(t, db2) {
		t.Fatalf("same database twice: %s, %s", dsn1, dsn2)
	}
	if _, err := db1.Exec("CREATE TABLE only_here (x int); INSERT INTO only_here VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db1.QueryRow("SELECT count(*) FROM only_here").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if _, err := db2.Exec("SELECT * FROM only_here"); err == nil {
		t.Fatal("table created in the first database is visible in the second")
	}
}

// Databases are dropped when their test ends, even with connections open.
func TestDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		db, _ := DB(t)
		name = currentDB(t, db)
	})
	db, _ := DB(t)
	var exists bool
	if err := db.QueryRow("SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

// Parallel tests each get their own database.
func TestParallel(t *testing.T) {
	for _, n := range []string{"a", "b", "c", "d"} {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			db, _ := DB(t)
			if _, err := db.Exec("CREATE TABLE t (x int)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

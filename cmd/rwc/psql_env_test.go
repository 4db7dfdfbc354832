package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rwc-dev/rwc/run/pgcluster"
	"github.com/rwc-dev/rwc/run/session"
)

// psqlPassword is alice's password: it must never appear in rwc's output.
const psqlPassword = "Sw0rdf1sh!pw"

// TestConnectLikePsql: without --dsn or RWC_DATABASE_URL, rwc connects
// where psql would: PGHOST, PGPORT, PGDATABASE, PGUSER with PGPASSWORD,
// the password file or a service (PGSERVICEFILE, else PGSYSCONFDIR's
// pg_service.conf), in CI too, and never starts its local PostgreSQL; a
// URL without sslmode connects to a server without SSL (prefer, libpq's
// default), and over SSL to one with it. The server asks for a password
// (scram-sha-256) and toggles SSL; the password is never printed.
func TestConnectLikePsql(t *testing.T) {
	if os.Getenv("RWC_SKIP_PG") == "1" {
		t.Skip("RWC_SKIP_PG=1: skipping test that needs PostgreSQL")
	}
	c := startCluster(t)
	admin := sqlDB(t, c.DSN("postgres"))
	mustExec(t, admin, "CREATE ROLE alice LOGIN PASSWORD '"+psqlPassword+"'")
	mustExec(t, admin, "CREATE DATABASE app OWNER alice")
	hba := "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(c.DataDir(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatal(err)
	}
	setSSL(t, c, admin, false)

	home := t.TempDir()
	work := t.TempDir()
	t.Chdir(work)
	port := fmt.Sprint(c.Port())
	clearEnv(t, "RWC_DATABASE_URL", "CI", "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD",
		"PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGPASSFILE", "PGSSLMODE")
	t.Setenv("HOME", home)

	connects := func(t *testing.T, args ...string) {
		t.Helper()
		code, stdout, stderr := rwcIn(t, "", append([]string{"status"}, args...)...)
		if code != 0 || !strings.Contains(stdout, "deployed: nothing yet") {
			t.Fatalf("rwc status: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		noSecret(t, stdout+stderr)
		if _, err := os.Stat(filepath.Join(work, ".rwc")); err == nil {
			t.Fatal("rwc started its local PostgreSQL though a server was named")
		}
	}
	fails := func(t *testing.T, want string, args ...string) string {
		t.Helper()
		code, stdout, stderr := rwcIn(t, "", append([]string{"status"}, args...)...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Fatalf("rwc status: exit %d, want 1 with %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
		}
		noSecret(t, stdout+stderr)
		return stderr
	}

	t.Run("PG variables", func(t *testing.T) {
		t.Setenv("PGHOST", "127.0.0.1")
		t.Setenv("PGPORT", port)
		t.Setenv("PGDATABASE", "app")
		t.Setenv("PGUSER", "alice")
		t.Setenv("PGPASSWORD", psqlPassword)
		connects(t)
		t.Setenv("CI", "true") // a server is named: no refusal in CI
		connects(t)
		// The message says which source won, without the password.
		t.Setenv("PGPASSWORD", "wrong")
		stderr := fails(t, "password authentication failed")
		if !strings.Contains(stderr, "cannot connect to host=127.0.0.1 port="+port+" dbname=app user=alice (PGHOST, PGPORT, PGDATABASE, as psql reads them)") {
			t.Errorf("the source is not named: %s", stderr)
		}
	})
	t.Run("password file", func(t *testing.T) {
		t.Setenv("PGHOST", "127.0.0.1")
		t.Setenv("PGPORT", port)
		t.Setenv("PGUSER", "alice")
		t.Setenv("PGDATABASE", "app")
		pgpass := filepath.Join(home, ".pgpass")
		writeFile(t, pgpass, "# rwc's test\n127.0.0.1:"+port+":other:alice:no\n127.0.0.1:*:app:alice:"+psqlPassword+"\n")
		if err := os.Chmod(pgpass, 0o600); err != nil {
			t.Fatal(err)
		}
		connects(t)
		// Readable by others: ignored, with libpq's warning.
		if err := os.Chmod(pgpass, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := rwcIn(t, "", "status")
		warned := stderr
		if code != 1 || !strings.Contains(warned, "has group or world access; permissions should be u=rw (0600) or less; it is ignored") {
			t.Errorf("a readable password file: exit %d, warning %q, stderr %q", code, warned, stderr)
		}
		noSecret(t, stderr+warned)
		os.Remove(pgpass)
	})
	t.Run("service", func(t *testing.T) {
		file := filepath.Join(home, "services.conf")
		writeFile(t, file, fmt.Sprintf("[appsvc]\nhost=127.0.0.1\nport=%s\ndbname=app\nuser=alice\npassword=%s\n", port, psqlPassword))
		t.Setenv("PGSERVICE", "appsvc")
		t.Setenv("PGSERVICEFILE", file)
		connects(t)
		// The connection string ranks above the service.
		fails(t, `database "nope" does not exist`, "--dsn", "dbname=nope")
		// The system's file, when the user's does not define it.
		sys := filepath.Join(home, "etc")
		writeFile(t, filepath.Join(sys, "pg_service.conf"), fmt.Sprintf("[syssvc]\nhost=127.0.0.1\nport=%s\ndbname=app\nuser=alice\npassword=%s\n", port, psqlPassword))
		t.Setenv("PGSERVICE", "syssvc")
		t.Setenv("PGSYSCONFDIR", sys)
		connects(t)
		t.Setenv("PGSERVICE", "nosuch")
		fails(t, `definition of service "nosuch" not found`)
	})
	url := fmt.Sprintf("postgres://alice:%s@127.0.0.1:%s/app", psqlPassword, port)
	t.Run("sslmode", func(t *testing.T) {
		// No sslmode: prefer. The server has no SSL: a plain session.
		connects(t, "--dsn", url)
		if ssl := sessionSSL(t, url); ssl {
			t.Error("a session over SSL to a server without it")
		}
		t.Setenv("PGSSLMODE", "require")
		fails(t, "the server does not accept SSL connections, and the connection's sslmode", "--dsn", url)
		os.Unsetenv("PGSSLMODE")
		// The server has SSL: prefer uses it.
		setSSL(t, c, admin, true)
		connects(t, "--dsn", url)
		if ssl := sessionSSL(t, url); !ssl {
			t.Error("sslmode unset (prefer): a plain session to a server with SSL")
		}
		connects(t, "--dsn", url+"?sslmode=require")
		connects(t, "--dsn", url+"?sslmode=disable")
		if ssl := sessionSSL(t, url+"?sslmode=disable"); ssl {
			t.Error("sslmode=disable: a session over SSL")
		}
	})
}

// clearEnv unsets each variable for the test (restored after it).
func clearEnv(t *testing.T, names ...string) {
	for _, n := range names {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}

func noSecret(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, psqlPassword) {
		t.Fatalf("the password was printed: %s", out)
	}
}

// sessionSSL reports whether a session rwc opens on dsn runs over SSL.
func sessionSSL(t *testing.T, dsn string) bool {
	t.Helper()
	db, err := session.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ssl bool
	if err := db.QueryRow(`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	return ssl
}

// setSSL turns the server's SSL on (with a self-signed certificate) or off,
// and reloads its configuration (pg_hba.conf too).
func setSSL(t *testing.T, c *pgcluster.Cluster, admin *sql.DB, on bool) {
	t.Helper()
	if on {
		writeCert(t, c.DataDir())
	}
	mustExec(t, admin, fmt.Sprintf("ALTER SYSTEM SET ssl = %v", on))
	mustExec(t, admin, "SELECT pg_reload_conf()")
	want := map[bool]string{true: "on", false: "off"}[on]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		// A new session sees the reloaded setting.
		db := sqlDB(t, c.DSN("postgres"))
		var got string
		err := db.QueryRowContext(ctx, "SHOW ssl").Scan(&got)
		db.Close()
		if err == nil && got == want {
			return
		}
		if ctx.Err() != nil {
			log, _ := os.ReadFile(c.LogFile())
			if len(log) > 2000 {
				log = log[len(log)-2000:]
			}
			t.Fatalf("ssl is %q, want %q (%v); the server's log ends:\n%s", got, want, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeCert writes server.crt and server.key, owned by the data
// directory's owner (the server's user), into dir.
func writeCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	for name, block := range map[string]*pem.Block{"server.crt": {Type: "CERTIFICATE", Bytes: der}, "server.key": {Type: "EC PRIVATE KEY", Bytes: kb}} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(sys.Uid), int(sys.Gid)); err != nil && os.Geteuid() == 0 {
			t.Fatal(err)
		}
	}
}

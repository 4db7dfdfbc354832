package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BinDir finds the PostgreSQL server binaries (initdb, pg_ctl, postgres):
// $RWC_PG_BINDIR, else `pg_config --bindir`, else the newest
// /usr/lib/postgresql/*/bin (Debian's layout, where pg_config may come from
// libpq-dev and name a bindir whose server package is not installed).
func BinDir() (string, error) {
	var cands []string
	if d := os.Getenv("RWC_PG_BINDIR"); d != "" {
		cands = append(cands, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		cands = append(cands, strings.TrimSpace(string(out)))
	}
	deb, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(deb, func(i, j int) bool { return pgMajor(deb[i]) > pgMajor(deb[j]) })
	for _, d := range append(cands, deb...) {
		if isExec(filepath.Join(d, "pg_ctl")) && isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("pgcluster: PostgreSQL server binaries (initdb, pg_ctl) not found; " +
		"install PostgreSQL 15 (Debian/Ubuntu: apt-get install postgresql-15, or apt-get install postgresql) " +
		"or set RWC_PG_BINDIR to the directory holding pg_ctl")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runAs is the unprivileged account the server runs as when we are root:
// initdb and postgres refuse to run as root.
type runAs struct{ uid, gid int }

func serverUser() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root, PostgreSQL must run as the \"postgres\" user, "+
			"which was not found (%v); create it or run rwc as a normal user", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &runAs{uid, gid}, nil
}

// run runs a PostgreSQL binary as the server user and returns its output.
func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = "/" // the server user may not be allowed into our working directory
	// Drop PG* variables (PGDATA, PGPORT, PGOPTIONS...): every setting comes
	// from our arguments and rwc.conf, never from the caller's environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LC_MESSAGES=C")
	if c.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.as.uid), Gid: uint32(c.as.gid)}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// chown gives path to the server user (no-op when not root).
func (c *Cluster) chown(path string) error {
	if c.as == nil {
		return nil
	}
	return os.Lchown(path, c.as.uid, c.as.gid)
}

// writeFile writes a file in the data directory readable by the server.
func (c *Cluster) writeFile(name, data string) error {
	p := c.path(name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		return err
	}
	return c.chown(p)
}

// lock takes an exclusive flock on DataDir.lock, so that two rwc processes
// (or two handles in one process: flock locks belong to open files) never
// run initdb or pg_ctl on the same directory at once. The lock file lives
// beside the data directory because it must exist before initdb and initdb
// wants an empty directory. It is never deleted: deleting would let a
// waiter lock a file that is no longer the one others open.
func (c *Cluster) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(c.dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("pgcluster: locking %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgcluster: waiting for lock %s: %w", f.Name(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// makeReachable lets the server user walk down to the data directory. As
// root, the data directory usually sits below directories only root may
// enter (/root is 0700, os.MkdirTemp makes 0700 dirs), and postgres fails
// with a bare "permission denied". We add only the search bit (o+x) to the
// ancestors that lack it: that allows passing through by name, not listing.
func (c *Cluster) makeReachable() error {
	if c.as == nil {
		return nil
	}
	for d := filepath.Dir(c.dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		ok := m&0o001 != 0 ||
			(int(st.Uid) == c.as.uid && m&0o100 != 0) ||
			(int(st.Gid) == c.as.gid && m&0o010 != 0)
		if !ok {
			if err := os.Chmod(d, fi.Mode()|0o001); err != nil {
				return fmt.Errorf("pgcluster: making %s traversable for the postgres user: %w", d, err)
			}
			fmt.Fprintf(c.log, "made %s traversable (o+x) so the postgres user can reach %s\n", d, c.dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// initdb creates the cluster. Collation is C (byte order: deterministic and
// immune to glibc collation changes); character classes are C.UTF-8 when
// the system has it, so upper()/lower() handle non-ASCII text.
func (c *Cluster) initdb() error {
	fmt.Fprintf(c.log, "initialising PostgreSQL data directory %s\n", c.dir)
	var out string
	var err error
	for _, ctype := range []string{"C.UTF-8", "C"} {
		// initdb accepts an existing empty directory; creating it ourselves
		// lets us hand it to the server user first.
		if err = os.MkdirAll(c.dir, 0o700); err != nil {
			return err
		}
		if err = c.chown(c.dir); err != nil {
			return err
		}
		args := []string{"-D", c.dir, "-U", "postgres", "-A", "trust", "-E", "UTF8",
			"--locale=C", "--lc-ctype=" + ctype, "--no-instructions"}
		if !c.fsync {
			args = append(args, "--no-sync")
		}
		if out, err = c.run(context.Background(), "initdb", args...); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("pgcluster: initdb %s failed: %v\n%s", c.dir, err, out)
	}
	// initdb's trust rules also cover ::1; keep exactly what we listen on.
	hba := "# Written by rwc: trust, but only on the local socket and 127.0.0.1.\n" +
		"local all all trust\nhost all all 127.0.0.1/32 trust\n" +
		"local replication all trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := c.writeFile("pg_hba.conf", hba); err != nil {
		return err
	}
	f, err := os.OpenFile(c.path("postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("\n# rwc settings (port, listen address, fsync), rewritten by every rwc start.\ninclude 'rwc.conf'\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// serverPID returns the pid in postmaster.pid if that process is alive and
// is a postgres, else 0. The name check (Linux /proc) matters after a crash
// or reboot, when the recorded pid may belong to an unrelated process.
func (c *Cluster) serverPID() int {
	b, err := os.ReadFile(c.path("postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		if name := strings.TrimSpace(string(comm)); name != "postgres" && name != "postmaster" {
			return 0
		}
	}
	return pid
}

// Command rwc compiles and runs REPLACE WHERE flows on PostgreSQL.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/rwc-dev/rwc/internal/gcpolicy" // no collection while the heap is small
	"github.com/rwc-dev/rwc/internal/version"
	"github.com/rwc-dev/rwc/run"
	"github.com/rwc-dev/rwc/run/libpq"
)

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type globals struct {
	dsn     string
	dir     string
	noColor bool  // --no-color
	early   *dial // a connection opened while the specs load (dialEarly)
	// lockTimeout is every session's lock_timeout: --lock-timeout where a
	// command has it (0: run.DefaultLockTimeout).
	lockTimeout time.Duration
	// stderr is where messages outside a command's own output go (the
	// local PostgreSQL starting, lint errors before a plan).
	stderr io.Writer
}

func newRoot(stderr io.Writer) *cobra.Command {
	g := &globals{stderr: stderr}
	root := &cobra.Command{
		Use:   "rwc",
		Short: "Keep PostgreSQL tables up to date with REPLACE WHERE flows",
		Long: `rwc keeps PostgreSQL tables up to date with REPLACE WHERE flows: each target
table has a source query and a window predicate; a refresh replaces exactly the
rows in the window, atomically, and leaves everything else untouched.

The database is, the first that applies: --dsn; else $RWC_DATABASE_URL (a URL,
postgres://user:pw@host/db, or libpq's key=value form); else, when PGHOST,
PGHOSTADDR, PGPORT, PGDATABASE or PGSERVICE is set, the server they name, as
psql connects (PGUSER, PGPASSWORD, PGSSLMODE and the password file too; PGUSER
or PGPASSWORD alone name no server); else the local PostgreSQL under .rwc/. In
CI (CI set to anything) or with RWC_DATABASE_URL set but empty there is no
local fallback: commands that need a database refuse to start, and rwc plan
plans without one only with --no-database. A message about the connection
names which of these won (--dsn, RWC_DATABASE_URL, the PG* variables), and
the connection string without its password.

Every connection string is read as libpq (psql) reads it: the PG* variables
fill in what it leaves out; sslmode is prefer unless something sets it (SSL
when the server has it, else a plain connection; require, verify-ca and
verify-full insist); a service (service= or PGSERVICE) is read from
PGSERVICEFILE, else ~/.pg_service.conf, else PGSYSCONFDIR's pg_service.conf
(/etc/postgresql-common without it), the string's own parameters ranking
above the service's and those above the environment's; the password, when
none is given, comes from PGPASSFILE, else ~/.pgpass, matched as libpq
matches it (* for any value, \ escaping : and \, the database not named
being the user's, localhost for the default socket), and ignored, with a
warning, when group or others may read it; with no host named, the server is
the Unix socket in /var/run/postgresql or /tmp when one is there (else
localhost). A password is
never printed: connection strings are shown redacted, and one that does not
parse is reported by the part that is malformed (scheme, user info, host, port,
a parameter, a key=value pair) rather than with the parser's message, which
quotes it. Every session starts with standard_conforming_strings = on,
backslash_quote = safe_encoding and client_encoding UTF8, the settings under
which rwc lint reads SQL, and application_name "rwc VERSION" (unless the
connection string names one; the session holding a flow's lock is "rwc VERSION
flow=NAME" meanwhile); a session that cannot have them is refused (see
docs/security.md). Every session also starts with lock_timeout set to
--lock-timeout (30s where a command has no such flag): no statement rwc sends
waits longer for a lock, and one that gives up names the table that was locked
and the session holding it (for a flow's lock: since when, doing what, whether
its client is still there, and the pg_terminate_backend that ends it). And with
client_connection_check_interval = 1s (PostgreSQL 14 or newer): should rwc be
killed, the server ends its statement within about a second, rolling back, and
releases the flow's lock.

SIGINT (Ctrl-C) or SIGTERM (a CI job cancelled) cancels the running statement
on the server; its refresh (or backfill batch) is rolled back and its flow's
lock released, and rwc says what had committed (flows, backfill batches: kept)
and what the next run does (rwc apply resumes: backfills go on at their first
batch not committed; the deployment is recorded once an apply completes), then
exits with status 130 (SIGINT) or 143 (SIGTERM), 128 + the signal's number. A
second signal exits at once, with the same status; the server then rolls back
what was running within about a second. A command that finished its work
before the signal reached it exits as it would have.

rwc --version prints rwc's version, the module's version, the commit it was
built from (+dirty: with uncommitted changes) and the Go version. Colours (rwc
plan on a terminal) are off with --no-color, or with NO_COLOR set to anything
(https://no-color.org). rwc completion bash|zsh|fish|powershell prints a shell
completion script; it completes flow names, read from the specs (DIR when the
command is given one, else ./pipelines).`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.dir != "" {
				if err := os.Chdir(g.dir); err != nil {
					return fmt.Errorf("-C %s: %w", g.dir, err)
				}
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.dsn, "dsn", "", "PostgreSQL connection URL or key=value string (default $RWC_DATABASE_URL, else the server PGHOST, PGPORT, PGDATABASE or PGSERVICE name, else the local PostgreSQL under .rwc/)")
	root.PersistentFlags().StringVarP(&g.dir, "chdir", "C", "", "run as if rwc was started in `DIR`")
	root.PersistentFlags().BoolVar(&g.noColor, "no-color", false, "no colours, even on a terminal (as NO_COLOR set to anything does)")
	root.SetVersionTemplate(strings.ReplaceAll(version.Long(), "{{", "{{`{{`}}"))
	root.Flags().Bool("version", false, "print rwc's version, the commit it was built from and its Go version")
	root.AddCommand(newLintCmd(g), newPlanCmd(g), newApplyCmd(g), newRefreshCmd(g), newBackfillCmd(g), newStatusCmd(g), newEventsCmd(g), newStateCmd(g), newLocalCmd(g), newGraphCmd(g), newInitCmd(g), newFmtCmd(g), newExplainCmd(g),
		newTestCmd(g), newImportCmd(g), newExportCmd(g))
	return root
}

func main() {
	os.Exit(executeThenExit(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, true))
}

// execute runs rwc with args and returns its exit status: 0, the
// command's own (1 on failure, plan's 2), or, when a SIGINT or SIGTERM
// stopped the command before it finished, 130 or 143 (interrupt.code).
// Everything it prints goes to stdout and stderr, so that the CLI can be
// run in-process.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return executeThenExit(args, stdin, stdout, stderr, false)
}

// executeThenExit is execute; exiting: the process exits once it returns,
// so the signals' handling is left as the command had it rather than
// restored (a round trip to the runtime's signal thread per signal, about
// a millisecond of every command). A signal that comes in between is not
// acted on: the command had finished, and exits as it would have.
func executeThenExit(args []string, stdin io.Reader, stdout, stderr io.Writer, exiting bool) int {
	libpq.Warnings = stderr // a password file others may read
	ctx, in, stop := catchInterrupts(stderr, os.Exit)
	defer stop(!exiting)
	root := newRoot(stderr)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0 // it finished what it was doing before the signal stopped it
	case errors.As(err, &ee):
	case in.code() != 0:
		fmt.Fprintf(stderr, "rwc: %s\n", redactArgs(interruptedText(err), args))
	default:
		fmt.Fprintf(stderr, "rwc: %s\n", redactArgs(err.Error(), args))
		return 1
	}
	if code := in.code(); code != 0 {
		return code
	}
	return ee.code
}

// interruptedText is err, of a command an interrupt stopped, in rwc's
// words: a cancelled statement's error is the driver's.
func interruptedText(err error) string {
	var stopped *run.Interrupted
	if errors.As(err, &stopped) || !run.IsCancelled(err) {
		return err.Error()
	}
	return "interrupted: the statement that was running was cancelled on the server, and its transaction rolled back"
}

// redactArgs hides the password of any connection string among the
// arguments that an error repeats: one typed where a command or a
// directory belongs (rwc apply postgres://u:pw@h/db) is echoed back.
func redactArgs(msg string, args []string) string {
	for _, a := range args {
		if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(flag, "-") {
			a = value
		}
		if !strings.Contains(a, "://") && !strings.Contains(strings.ToLower(a), "password") {
			continue
		}
		for _, form := range []string{a, strings.Trim(strconv.Quote(a), `"`)} {
			msg = strings.ReplaceAll(msg, form, run.Redact(a))
		}
	}
	return msg
}

// color reports whether output to w gets ANSI colours: only on a
// terminal, and neither with --no-color nor with NO_COLOR set to anything
// but the empty string (https://no-color.org).
func (g *globals) color(w any) bool {
	return useColor(g.noColor, os.Getenv("NO_COLOR"), isTerminal(w))
}

func useColor(noColor bool, noColorEnv string, tty bool) bool {
	return tty && !noColor && noColorEnv == ""
}

// timeNow is the clock commands resolve current_date() with.
var timeNow = time.Now

// Package cutproxy is a PostgreSQL wire-protocol proxy for tests that kill
// a client at a chosen statement: it counts the statement boundaries
// clients send through it (across all their connections) and, once the Nth
// has been passed on to the server, cuts every connection and refuses new
// ones, as if the client process had died right then.
//
// A boundary is a simple Query ('Q') or an extended-protocol Sync ('S'):
// the points at which the server acts on what the client sent (a Sync ends
// a Parse/Bind/Execute round trip, and commits it when no transaction block
// is open). lib/pq sends a statement with parameters as two round trips
// (Parse/Describe/Sync, then Bind/Execute/Sync), so such a statement has two
// boundaries; a statement without parameters, or several in one string, is
// one Query.
//
// The Nth boundary message is written to the server in full before the cut,
// and the server's side is closed with a FIN, not a reset: the server reads
// it and acts on it (a COMMIT commits) before it sees the client gone, and
// then rolls back whatever transaction is still open. The client never sees
// the answer. Cut after a COMMIT it is the ambiguous outcome of a client
// that died waiting for its commit to be confirmed.
package cutproxy

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Boundary is one statement boundary a client sent: its number (from 1,
// across connections) and what it was.
type Boundary struct {
	N    int
	Conn int    // which connection (from 1, in the order they were opened)
	Type byte   // 'Q' or 'S'
	SQL  string // the Query's text, or the text of the last Parse before the Sync
}

func (b Boundary) String() string {
	q := strings.Join(strings.Fields(b.SQL), " ")
	if len(q) > 120 {
		q = q[:117] + "..."
	}
	return fmt.Sprintf("#%d conn %d %c %s", b.N, b.Conn, b.Type, q)
}

// Options configure a Proxy.
type Options struct {
	// CutAfter cuts every connection once this many boundaries have been
	// passed on (0: never).
	CutAfter int
	// CutWhen, when set, cuts every connection right after the first
	// boundary it holds for has been passed on: a cut at a statement
	// whatever its number, which other connections' statements shift.
	CutWhen func(Boundary) bool
	// Before, when set, is called with each boundary before it is passed
	// on, and no boundary of any connection is passed on until it returns:
	// the test can read the database as the client has left it so far
	// (not through the proxy, and with a lock timeout: the client may
	// hold locks).
	Before func(Boundary)
}

// Proxy listens on a local port and forwards to a PostgreSQL server.
type Proxy struct {
	ln       net.Listener
	upstream string
	opts     Options

	mu        sync.Mutex
	n         int // boundaries so far
	nconn     int
	cut       bool
	conns     []net.Conn     // the clients' connections
	servers   []*net.TCPConn // the proxy's connections to the server
	ports     []int          // local ports of the server-side connections
	log       []Boundary
	cutCh     chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	errs      []error
}

// Start starts a proxy to upstream (host:port).
func Start(upstream string, opts Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, opts: opts, cutCh: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// DSN is dsn (a postgres:// URL) with its host and port replaced by the
// proxy's.
func (p *Proxy) DSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u.Host = p.ln.Addr().String()
	return u.String(), nil
}

// Upstream is the host:port of a postgres:// URL, for Start.
func Upstream(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432"), nil
	}
	return u.Host, nil
}

// Cut is closed when the proxy cuts, just before it closes the
// connections.
func (p *Proxy) Cut() <-chan struct{} { return p.cutCh }

// Count is the number of boundaries passed on so far.
func (p *Proxy) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Log is every boundary passed on, in order.
func (p *Proxy) Log() []Boundary {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Boundary(nil), p.log...)
}

// ServerPorts are the local ports of the proxy's connections to the
// server: pg_stat_activity.client_port of the client's backends.
func (p *Proxy) ServerPorts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.ports...)
}

// Err is the first protocol error the proxy met (a message it could not
// parse), nil if none: a test should check it, or its counts mean nothing.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		p.ln.Close()
		p.mu.Lock()
		p.closeAll()
		p.mu.Unlock()
	})
	p.wg.Wait()
}

// closeAll closes the clients' connections and the proxy's sending side
// of its connections to the server (with p.mu held).
func (p *Proxy) closeAll() {
	for _, c := range p.conns {
		c.Close()
	}
	for _, c := range p.servers {
		c.CloseWrite()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close() // the client is dead: nothing of it reaches the server
			continue
		}
		p.nconn++
		id := p.nconn
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, id)
	}
}

func (p *Proxy) fail(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

func (p *Proxy) serve(client net.Conn, id int) {
	defer p.wg.Done()
	defer client.Close()
	conn, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	server := conn.(*net.TCPConn)
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		server.Close()
		return
	}
	p.servers = append(p.servers, server)
	if a, ok := server.LocalAddr().(*net.TCPAddr); ok {
		p.ports = append(p.ports, a.Port)
	}
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		// The server's answers go to the client until it is gone, and are
		// then read to the end: closing a socket with unread data sends a
		// reset, which could overtake the messages the server is yet to
		// read. The server closes its side when it has read them all.
		defer p.wg.Done()
		io.Copy(client, server)
		client.Close()
		io.Copy(io.Discard, server)
		server.Close()
	}()
	if err := p.fromClient(client, server, id); err != nil {
		p.fail(fmt.Errorf("connection %d: %w", id, err))
	}
	client.Close()
	server.CloseWrite()
}

// Startup-phase request codes (the int32 after a startup packet's length).
const (
	sslRequest    = 80877103
	gssencRequest = 80877104
	cancelRequest = 80877102
)

// fromClient forwards the client's messages to the server, counting
// boundaries and cutting at the limit. It returns nil when the connection
// ends (either side, or the cut).
func (p *Proxy) fromClient(client net.Conn, server io.Writer, id int) error {
	// The startup phase: length-prefixed packets without a type byte. An
	// SSL or GSSAPI request is answered by the server with one byte and is
	// followed by the real startup packet (encryption is not supported: the
	// proxy must see the messages).
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(client, hdr[:]); err != nil {
			return nil
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > 1<<20 {
			return fmt.Errorf("startup packet of %d bytes", n)
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(client, body); err != nil {
			return nil
		}
		if _, err := server.Write(append(hdr[:], body...)); err != nil {
			return nil
		}
		if code == sslRequest || code == gssencRequest {
			// The server's one-byte answer is copied back by the other
			// direction; anything but 'N' would start an encrypted stream.
			continue
		}
		if code == cancelRequest {
			return nil
		}
		break
	}
	var lastParse string
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(client, hdr[:]); err != nil {
			return nil
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if n < 4 || n > 1<<30 {
			return fmt.Errorf("message %q of length %d", hdr[0], n)
		}
		msg := make([]byte, 5+n-4)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(client, msg[5:]); err != nil {
			return nil
		}
		typ := msg[0]
		switch typ {
		case 'P': // Parse: name \0 query \0 ...
			if parts := bytes.SplitN(msg[5:], []byte{0}, 3); len(parts) == 3 {
				lastParse = string(parts[1])
			}
		case 'Q', 'S':
			b := Boundary{Conn: id, Type: typ, SQL: lastParse}
			if typ == 'Q' {
				b.SQL = string(bytes.TrimRight(msg[5:], "\x00"))
			}
			if !p.boundary(b, server, msg) {
				return nil
			}
			continue
		}
		if _, err := server.Write(msg); err != nil {
			return nil
		}
	}
}

// boundary counts a boundary, passes it on and cuts when it is the last;
// it reports whether the connection goes on.
func (p *Proxy) boundary(b Boundary, server io.Writer, msg []byte) bool {
	// One boundary at a time, across connections: the count is the order
	// in which the server was given them.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.n++
	b.N = p.n
	if p.opts.Before != nil {
		p.opts.Before(b)
	}
	_, err := server.Write(msg)
	if err != nil {
		return false
	}
	p.log = append(p.log, b)
	if p.opts.CutAfter > 0 && p.n >= p.opts.CutAfter || p.opts.CutWhen != nil && p.opts.CutWhen(b) {
		p.cut = true
		// Cut is closed first: whoever waits on it learns of the cut before
		// the client can fail of it. The server has the message; a FIN
		// after it, so it acts on it and then finds the client gone.
		close(p.cutCh)
		p.closeAll()
		return false
	}
	return true
}

// WaitGone waits until the server has no backend left for the proxy's
// connections (db must not go through the proxy): after a cut, until then
// a backend may still be acting on what it was sent (a COMMIT may not have
// committed yet).
func (p *Proxy) WaitGone(ctx context.Context, db *sql.DB) error {
	ports := p.ServerPorts()
	if len(ports) == 0 {
		return nil
	}
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY($1)
			AND client_addr IS NOT NULL AND backend_type = 'client backend'`, pq.Array(ports)).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d backends of the proxy's connections still there: %w", n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

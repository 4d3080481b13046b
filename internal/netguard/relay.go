package netguard

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// maxHead bounds a buffered ClientHello or HTTP request head.
const maxHead = 64 << 10

// relay checks what the client sends first (a TLS ClientHello's SNI, every
// plain HTTP request's Host) and splices the two connections, counting
// bytes. Server bytes go to the client from the start, so protocols where
// the server speaks first (ssh, smtp) work.
func (c *tcpConn) relay(down, up net.Conn) {
	c.downConn = down
	var in, out atomic.Int64
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(down, up)
		in.Add(n)
		closeWrite(down)
		close(done)
	}()
	br := bufio.NewReaderSize(down, maxHead)
	err := c.clientToServer(br, up, &out)
	if err != nil {
		// A denial: cut both ways at once.
		up.Close()
		down.Close()
	} else {
		closeWrite(up)
	}
	<-done
	c.ev.BytesIn, c.ev.BytesOut = in.Load(), out.Load()
	if c.ev.Decision == "" {
		c.ev.Decision = Allow
		c.p.record(c.ev)
	}
}

type closeWriter interface{ CloseWrite() error }

func closeWrite(c net.Conn) {
	if cw, ok := c.(closeWriter); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// errDenied ends a connection that a check refused; the event is recorded.
var errDenied = errors.New("netguard: denied")

func (c *tcpConn) clientToServer(br *bufio.Reader, up net.Conn, out *atomic.Int64) error {
	byName := c.addrRule.Text == ""
	for {
		first, err := br.Peek(1)
		if err != nil {
			return nil
		}
		kind := kindRaw
		switch {
		case first[0] == 0x16:
			if err := c.checkTLS(br, up, out, byName); err != nil {
				return err
			}
		case byName:
			// A connection to an allowed address is not read: any name
			// may be asked of it.
			kind = firstLine(br)
		}
		switch kind {
		case kindH2:
			return c.deny(FromAddr, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: HTTP/2 without TLS hides the host name; use https or HTTP/1.1", hostPort(c.ev.Host, c.port)))
		case kindHTTP:
			again, err := c.httpLoop(br, up, out)
			if err != nil || !again {
				return err
			}
			// After CONNECT or an Upgrade the client may speak anything,
			// HTTP or TLS included (the server may not have taken it):
			// decided as a new connection's first bytes are.
			continue
		}
		n, _ := io.Copy(up, br)
		out.Add(n)
		return nil
	}
}

// deny records a denial of this connection.
func (c *tcpConn) deny(from, host, reason, detail string) error {
	c.ev.Decision, c.ev.HostFrom, c.ev.Host, c.ev.Reason, c.ev.Detail = Deny, from, host, reason, detail
	c.p.record(c.ev)
	return errDenied
}

// checkTLS reads the ClientHello, checks its server name and forwards it.
// A connection made by name must name an allowed host for this port; one
// made to an allowed address may name anything or nothing.
func (c *tcpConn) checkTLS(br *bufio.Reader, up net.Conn, out *atomic.Int64, byName bool) error {
	var seen bytes.Buffer
	sni, ok := serverName(io.TeeReader(io.LimitReader(br, maxHead), &seen))
	where := hostPort(c.dst.String(), c.port)
	switch {
	case !ok && byName:
		return c.deny(FromSNI, c.ev.Host, ReasonNoSNI, where+": the TLS ClientHello could not be read")
	case byName && sni == "":
		return c.deny(FromSNI, "", ReasonNoSNI, fmt.Sprintf("%s: TLS without a server name is allowed only to an address in the allow list %s", where, list(c.p.rules)))
	case byName:
		name := normalizeName(sni)
		if r, why := nameDecision(c.p.rules, name, c.port); r.Text == "" {
			if name == "" {
				why = fmt.Sprintf("TLS server name %q is not a host name", sni)
			}
			return c.deny(FromSNI, sni, ReasonSNI, why)
		} else {
			c.ev.Host, c.ev.HostFrom, c.ev.Rule = name, FromSNI, r.Text
		}
	}
	n, err := up.Write(seen.Bytes())
	out.Add(int64(n))
	return err
}

// serverName parses a TLS ClientHello from r with crypto/tls and returns
// its server name; ok is false when r does not hold one.
func serverName(r io.Reader) (name string, ok bool) {
	conn := &sniffConn{r: r}
	_ = tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, ok = h.ServerName, true
		return nil, errSniffed
	}}).Handshake()
	return name, ok
}

var errSniffed = errors.New("sniffed")

// sniffConn is a read-only net.Conn over a reader; writes are dropped.
type sniffConn struct {
	net.Conn
	r io.Reader
}

func (s *sniffConn) Read(p []byte) (int, error)       { return s.r.Read(p) }
func (s *sniffConn) Write(p []byte) (int, error)      { return len(p), nil }
func (s *sniffConn) Close() error                     { return nil }
func (s *sniffConn) SetDeadline(time.Time) error      { return nil }
func (s *sniffConn) SetReadDeadline(time.Time) error  { return nil }
func (s *sniffConn) SetWriteDeadline(time.Time) error { return nil }
func (s *sniffConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (s *sniffConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// httpMethods are the methods whose request line is HTTP even without a
// version (HTTP/0.9's "GET /"); any other method token followed by a
// target and a version is HTTP too, as servers accept any token.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PROPFIND"}

// What a client speaks, from its first line.
const (
	kindUndecided = iota
	kindRaw
	kindHTTP
	kindH2
)

// firstLine decides what the client of a connection made by name speaks,
// from its first bytes: it holds them (fail closed) until classify can
// tell, so that a request line split across writes is still seen whole. A
// first line still undecided at maxHead bytes is HTTP (servers accept
// longer request lines), and its head is then refused as too large.
func firstLine(br *bufio.Reader) int {
	for {
		b, _ := br.Peek(br.Buffered())
		k := classify(b)
		switch {
		case k != kindUndecided:
			return k
		case len(b) >= maxHead:
			return kindHTTP
		}
		if _, err := br.Peek(len(b) + 1); err != nil {
			return kindRaw
		}
	}
}

// classify decides from a client's first bytes: empty lines (which
// servers skip), then a method token, a space and a line with an HTTP
// version anywhere in it (or a known method: HTTP/0.9) is HTTP; "PRI" is
// HTTP/2's preface; a first byte that no token begins, a token followed
// by anything but a space, or a control byte in the line is something
// else; the rest is undecided until the line ends.
func classify(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	start := i
	for i < len(b) && isToken(b[i]) {
		i++
	}
	if i == len(b) {
		return kindUndecided
	}
	if i == start || b[i] != ' ' && b[i] != '\t' {
		return kindRaw
	}
	method, line := string(b[start:i]), b[i:]
	end := bytes.IndexByte(line, '\n')
	if end >= 0 {
		line = line[:end]
	}
	for _, ch := range line {
		if ch < 0x20 && ch != '\t' && ch != '\r' || ch == 0x7f {
			return kindRaw
		}
	}
	switch {
	case method == "PRI":
		return kindH2
	case end < 0:
		return kindUndecided
	case bytes.Contains(bytes.ToUpper(line), []byte(" HTTP/")) || slices.Contains(httpMethods, method):
		return kindHTTP
	}
	return kindRaw
}

// isToken reports whether ch may be in an HTTP method (RFC 9110's tchar).
func isToken(ch byte) bool {
	return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0
}

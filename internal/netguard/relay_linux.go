package netguard

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
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
		c.g.record(c.ev)
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
	first, err := br.Peek(1)
	if err != nil {
		return nil
	}
	byName := c.addrRule.Text == ""
	if first[0] == 0x16 {
		if err := c.checkTLS(br, up, out, byName); err != nil {
			return err
		}
		n, _ := io.Copy(up, br)
		out.Add(n)
		return nil
	}
	line := ""
	if byName {
		// A connection to an allowed address is not read: any name
		// may be asked of it.
		line = firstLine(br)
	}
	switch {
	case byName && strings.HasPrefix(strings.TrimLeft(line, "\r\n"), h2Preface):
		return c.deny(FromAddr, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: HTTP/2 without TLS hides the host name; use https or HTTP/1.1", hostPort(c.ev.Host, c.port)))
	case byName && (looksHTTP(line) || firstLineHTTP(line)):
		// A method, or a first line that ends in HTTP/1.x (any method
		// token), after the empty lines servers skip.
		return c.httpLoop(br, up, out)
	}
	n, _ := io.Copy(up, br)
	out.Add(n)
	return nil
}

// deny records a denial of this connection.
func (c *tcpConn) deny(from, host, reason, detail string) error {
	c.ev.Decision, c.ev.HostFrom, c.ev.Host, c.ev.Reason, c.ev.Detail = Deny, from, host, reason, detail
	c.g.record(c.ev)
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
		return c.deny(FromSNI, "", ReasonNoSNI, fmt.Sprintf("%s: TLS without a server name is allowed only to an address in the allow list %s", where, list(c.g.rules)))
	case byName:
		name := normalizeName(sni)
		if r, why := nameDecision(c.g.rules, name, c.port); r.Text == "" {
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

var httpMethods = []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE ", "PROPFIND "}

// firstLine returns what the client sent first on a connection made by
// name: its whole first line when it begins as text, so that a request
// line split across writes is still seen whole; or what arrived, when it
// begins with a byte that no text line does. A text line never ended
// holds the connection (fail closed), up to maxHead bytes.
func firstLine(br *bufio.Reader) string {
	b, _ := br.Peek(br.Buffered())
	for text(b) && bytes.IndexByte(bytes.TrimLeft(b, "\r\n"), '\n') < 0 && len(b) < maxHead {
		if _, err := br.Peek(len(b) + 1); err != nil {
			break
		}
		b, _ = br.Peek(br.Buffered())
	}
	return string(b)
}

// text reports whether b is printable ASCII, tabs and line ends.
func text(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\r' && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

const h2Preface = "PRI "

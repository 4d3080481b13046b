package netguard

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
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
	err := c.clientToServer(br, up, &out, done)
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

// clientToServer decides what the client sends, and forwards it. A
// connection admitted by an address rule or a tcp:// rule is not read.
// Any other is read and fails closed: its first flight must be a TLS
// ClientHello naming an allowed host, an HTTP/1.x request (every request
// on the connection, parsed strictly) with an allowed host, or an SSH
// client's identification line; anything else is refused.
//
// After a request with a body nothing more is forwarded (see
// lastRequest); serverDone is closed when the server's side ends.
func (c *tcpConn) clientToServer(br *bufio.Reader, up net.Conn, out *atomic.Int64, serverDone <-chan struct{}) error {
	if r, ok := c.unread(); ok {
		c.ev.Rule = r.Text
		return copyRest(br, up, out)
	}
	after := ""
	for {
		first, err := br.Peek(1)
		if err != nil {
			return nil
		}
		switch {
		case first[0] == 0x16:
			if err := c.checkTLS(br, up, out); err != nil {
				return err
			}
			return copyRest(br, up, out)
		case after == "websocket" && webSocketFrame(br):
			return copyRest(br, up, out)
		case startsSSH(br):
			if err := c.checkSSH(br, up, out); err != nil {
				return err
			}
			return copyRest(br, up, out)
		}
		next, err := c.httpLoop(br, up, out, after == "")
		if err != nil || next == "" {
			return err
		}
		if next == afterBody {
			c.discardRest(br, serverDone)
			return nil
		}
		// After CONNECT or an Upgrade the client may speak anything (the
		// server may not have taken it): decided as a first flight is,
		// with WebSocket frames too after an Upgrade to websocket.
		after = next
	}
}

// unread returns the rule under which a connection is not read: the
// address rule that admitted it, or a tcp:// rule for one of the names
// its address was pinned for, on its port.
func (c *tcpConn) unread() (Rule, bool) {
	if c.addrRule.Text != "" {
		return c.addrRule, true
	}
	for _, n := range c.names {
		for _, r := range c.p.rules {
			if r.Raw && r.matchName(n) && r.portOK(c.port) {
				return r, true
			}
		}
	}
	return Rule{}, false
}

func copyRest(br *bufio.Reader, up net.Conn, out *atomic.Int64) error {
	n, _ := io.Copy(up, br)
	out.Add(n)
	return nil
}

// deny records a denial of this connection.
func (c *tcpConn) deny(from, host, reason, detail string) error {
	c.ev.Decision, c.ev.HostFrom, c.ev.Host, c.ev.Reason, c.ev.Detail = Deny, from, host, reason, detail
	c.p.record(c.ev)
	return errDenied
}

// checkTLS reads the ClientHello, checks that its server name is an
// allowed host for this port, and forwards it.
func (c *tcpConn) checkTLS(br *bufio.Reader, up net.Conn, out *atomic.Int64) error {
	var seen bytes.Buffer
	sni, ok := serverName(io.TeeReader(io.LimitReader(br, maxHead), &seen))
	where := hostPort(c.dst.String(), c.port)
	switch {
	case !ok:
		return c.deny(FromSNI, c.ev.Host, ReasonNoSNI, where+": the TLS ClientHello could not be read")
	case sni == "":
		return c.deny(FromSNI, "", ReasonNoSNI, fmt.Sprintf("%s: TLS without a server name is allowed only to an address in the allow list %s", where, list(c.p.rules)))
	}
	name := normalizeName(sni)
	r, why := nameDecision(c.p.rules, name, c.port)
	if r.Text == "" {
		if name == "" {
			why = fmt.Sprintf("TLS server name %q is not a host name", sni)
		}
		return c.deny(FromSNI, sni, ReasonSNI, why)
	}
	c.ev.Host, c.ev.HostFrom, c.ev.Rule = name, FromSNI, r.Text
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

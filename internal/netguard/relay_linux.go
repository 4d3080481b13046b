package netguard

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
	word := ""
	if first[0] != 0x16 {
		word = c.firstWord(br)
	}
	switch {
	case first[0] == 0x16:
		if err := c.checkTLS(br, up, out, byName); err != nil {
			return err
		}
	case looksHTTP(word):
		if byName {
			return c.httpLoop(br, up, out)
		}
	case byName && strings.HasPrefix(word, h2Preface):
		return c.deny(FromAddr, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: HTTP/2 without TLS hides the host name; use https or HTTP/1.1", hostPort(c.ev.Host, c.port)))
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

// prefixWait bounds how long the guard waits for the rest of a first
// word that might be an HTTP method or HTTP/2's preface: a protocol whose
// client sends a few bytes and waits is not held up longer.
const prefixWait = time.Second

// firstWord returns the client's first bytes, up to 9: as many as arrived,
// or, when they could still become an HTTP method or HTTP/2's preface,
// more until that is decided or prefixWait has passed.
func (c *tcpConn) firstWord(br *bufio.Reader) string {
	b, _ := br.Peek(min(9, br.Buffered()))
	if len(b) >= 9 || !couldBecome(string(b)) {
		return string(b)
	}
	_ = c.downConn.SetReadDeadline(time.Now().Add(prefixWait))
	for len(b) < 9 && couldBecome(string(b)) {
		var err error
		if b, err = br.Peek(len(b) + 1); err != nil {
			break
		}
	}
	_ = c.downConn.SetReadDeadline(time.Time{})
	b, _ = br.Peek(min(9, br.Buffered()))
	return string(b)
}

// couldBecome reports whether w is a strict prefix of a method or of
// HTTP/2's preface.
func couldBecome(w string) bool {
	for _, m := range append(httpMethods, h2Preface) {
		if len(w) < len(m) && strings.HasPrefix(m, w) {
			return true
		}
	}
	return false
}

const h2Preface = "PRI "

func looksHTTP(w string) bool {
	for _, m := range httpMethods {
		if strings.HasPrefix(w, m) {
			return true
		}
	}
	return false
}

// httpLoop checks the Host of every request on a plain HTTP connection and
// forwards each request's bytes as they were sent. A refused request gets
// a 403 whose body says why, and the connection ends.
func (c *tcpConn) httpLoop(br *bufio.Reader, up net.Conn, out *atomic.Int64) error {
	for {
		if _, err := br.Peek(1); err != nil {
			return nil
		}
		head, err := readHead(br)
		if err != nil {
			return c.deny(FromHTTP, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: unreadable HTTP request: %v", hostPort(c.ev.Host, c.port), err))
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return c.deny(FromHTTP, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: unreadable HTTP request: %v", hostPort(c.ev.Host, c.port), err))
		}
		host := req.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		name := normalizeName(host)
		r, why := nameDecision(c.g.rules, name, c.port)
		if r.Text == "" {
			if name == "" {
				why = fmt.Sprintf("HTTP Host %q is not an allowed host name; allowed: %s", req.Host, list(c.g.rules))
			}
			err := c.deny(FromHTTP, req.Host, ReasonHTTPHost, why)
			body := "cordon: network_denied: " + why + "\n"
			_, _ = fmt.Fprintf(c.downConn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			// Read what the client still sends, so that closing does not
			// reset the connection before it reads the answer.
			closeWrite(c.downConn)
			_ = c.downConn.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = io.Copy(io.Discard, br)
			return err
		}
		c.ev.Host, c.ev.HostFrom, c.ev.Rule = name, FromHTTP, r.Text
		n, err := up.Write(head)
		out.Add(int64(n))
		if err != nil {
			return nil
		}
		if err := forwardBody(br, up, req, out); err != nil {
			return nil
		}
		if req.Method == http.MethodConnect || req.Header.Get("Upgrade") != "" {
			// The stream is no longer HTTP/1.1 requests.
			n, _ := io.Copy(up, br)
			out.Add(n)
			return nil
		}
	}
}

// readHead reads one request head, through the blank line.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			return nil, err
		}
		if len(head) > maxHead {
			return nil, errors.New("request head too large")
		}
		if len(line) <= 2 && strings.TrimRight(string(line), "\r\n") == "" {
			return head, nil
		}
	}
}

// forwardBody copies one request body as sent: Content-Length bytes, or
// the chunks through the last chunk and its trailers.
func forwardBody(br *bufio.Reader, up io.Writer, req *http.Request, out *atomic.Int64) error {
	if len(req.TransferEncoding) > 0 {
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return err
			}
			if _, err := up.Write(line); err != nil {
				return err
			}
			out.Add(int64(len(line)))
			sz := strings.TrimSpace(string(line))
			if i := strings.IndexByte(sz, ';'); i >= 0 {
				sz = sz[:i]
			}
			n, err := strconv.ParseInt(sz, 16, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("bad chunk size %q", sz)
			}
			if n == 0 {
				// Trailers, through the blank line.
				t, err := readHead(br)
				if err != nil {
					return err
				}
				w, err := up.Write(t)
				out.Add(int64(w))
				return err
			}
			if err := copyN(up, br, n+2, out); err != nil {
				return err
			}
		}
	}
	if req.ContentLength > 0 {
		return copyN(up, br, req.ContentLength, out)
	}
	return nil
}

func copyN(w io.Writer, r io.Reader, n int64, out *atomic.Int64) error {
	k, err := io.CopyN(w, r, n)
	out.Add(k)
	return err
}

package netguard

import (
	"bufio"
	"bytes"
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

// emptyLines reads the empty lines (CR LF, or a bare LF) a client may send
// before a request (servers skip them), to be forwarded with the request
// once it is allowed; it returns io.EOF at the end of the stream, and a
// headError for a CR that does not end a line.
func emptyLines(br *bufio.Reader) ([]byte, error) {
	var lines []byte
	for {
		b, err := br.Peek(1)
		if err != nil {
			return nil, io.EOF
		}
		switch {
		case b[0] == '\n':
		case b[0] == '\r':
			if b, err := br.Peek(2); err != nil || b[1] != '\n' {
				return nil, headError("a CR that does not end a line")
			}
		default:
			return lines, nil
		}
		if len(lines) >= maxHead {
			return nil, headError("too many empty lines")
		}
		c, _ := br.ReadByte()
		lines = append(lines, c)
	}
}

// ambiguousFraming says what makes a request head's length ambiguous
// (both Transfer-Encoding and Content-Length, two different
// Content-Lengths, a folded header line, Transfer-Encoding in HTTP/1.0,
// which Go's reader ignores and RFC 9112 6.1 calls faulty framing), or "".
func ambiguousFraming(head []byte) string {
	lines := strings.Split(string(head), "\n")
	var cl []string
	te := false
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			return "a folded header line"
		}
		name, value, _ := strings.Cut(l, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			cl = append(cl, strings.TrimSpace(value))
		case "transfer-encoding":
			te = true
		}
	}
	switch {
	case te && strings.HasSuffix(strings.TrimRight(lines[0], "\r"), " HTTP/1.0"):
		return "Transfer-Encoding in an HTTP/1.0 request"
	case te && len(cl) > 0:
		return "both Transfer-Encoding and Content-Length"
	case len(cl) > 1:
		for _, v := range cl[1:] {
			if v != cl[0] {
				return "two different Content-Lengths"
			}
		}
	}
	return ""
}

// httpLoop checks every request on a plain HTTP connection, parsed
// strictly (see readRequestHead and requestName), and forwards each
// request's bytes as they were sent. A refused request gets a 403 whose
// body says why, and the connection ends. After a CONNECT or an Upgrade
// request it returns "connect", or the Upgrade's protocol: what follows is
// decided afresh; after a request with a body, afterBody: nothing follows.
// first: nothing has been read of the connection yet.
func (c *tcpConn) httpLoop(br *bufio.Reader, up net.Conn, out *atomic.Int64, first bool) (next string, err error) {
	for {
		lead, err := emptyLines(br)
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		var head []byte
		var h requestHead
		if b, perr := br.Peek(1); err == nil && perr == nil && !isToken(b[0]) {
			err = errBinary
		}
		if err == nil {
			head, h, err = readRequestHead(br)
		}
		if err != nil {
			return "", c.refuseUnread(br, err, first && len(lead) == 0)
		}
		first = false
		if why := ambiguousFraming(head); why != "" {
			// The server could read another request where the guard
			// reads a body, and that request's Host would go unchecked.
			return "", c.deny(FromHTTP, c.ev.Host, ReasonHTTPFraming, fmt.Sprintf("%s: HTTP request with %s refused: its end is ambiguous", hostPort(c.ev.Host, c.port), why))
		}
		host, err := requestName(h)
		if err != nil {
			return "", c.refuseHTTP(br, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: HTTP request refused: %v", hostPort(c.ev.Host, c.port), err))
		}
		name := normalizeName(host)
		r, why := nameDecision(c.p.rules, name, c.port)
		if r.Text == "" {
			if name == "" {
				why = fmt.Sprintf("HTTP Host %q is not an allowed host name; allowed: %s", host, list(c.p.rules))
			}
			return "", c.refuseHTTP(br, host, ReasonHTTPHost, why)
		}
		// Go's reader for the body's framing (and as a second opinion).
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return "", c.refuseHTTP(br, name, ReasonHTTPMalformed, fmt.Sprintf("%s: unreadable HTTP request: %v", hostPort(name, c.port), err))
		}
		c.ev.Host, c.ev.HostFrom, c.ev.Rule = name, FromHTTP, r.Text
		last := bodyFollows(req)
		if last {
			// A server that does not read the body (it need not, for a
			// GET) would read it as the next request, whose Host the
			// guard never saw: this request is the connection's last.
			head = lastRequest(head)
		}
		n, err := up.Write(append(lead, head...))
		out.Add(int64(n))
		if err != nil {
			return "", nil
		}
		if err := forwardBody(br, up, req, out); err != nil {
			var fe framingError
			if errors.As(err, &fe) {
				// The server could read what follows as another request.
				return "", c.deny(FromHTTP, name, ReasonHTTPFraming, fmt.Sprintf("%s: HTTP request body refused: %v", hostPort(name, c.port), err))
			}
			return "", nil
		}
		switch {
		case last:
			return afterBody, nil
		case h.method == http.MethodConnect:
			return "connect", nil
		case h.upgrade != "":
			if hasToken(h.upgrade, "websocket") {
				return "websocket", nil
			}
			return "upgrade", nil
		}
	}
}

// afterBody is httpLoop's answer after a request with a body, the last
// one it forwards on a connection.
const afterBody = "body"

// bodyFollows reports whether a request has a body, or may send one
// (Expect asks the server to wait for it).
func bodyFollows(req *http.Request) bool {
	return req.ContentLength != 0 || len(req.TransferEncoding) > 0 || len(req.Header.Values("Expect")) > 0
}

// lastRequest rewrites a request head (as readRequestHead read it) so that
// the server ends the connection after its answer: one "Connection:
// close" takes the place of the first Connection field (or comes before
// the blank line), the others go, and every other byte is kept. A server
// that then stops after this request never reads its body as another
// request; RFC 9112 9.6 says it must. (One that reads none or part of a
// body and ignores the close is the case that remains; the guard does not
// parse answers to see where one ends.)
func lastRequest(head []byte) []byte {
	out := make([]byte, 0, len(head)+len("Connection: close\r\n"))
	closed := false
	for i := 0; len(head) > 0; i++ {
		k := bytes.IndexByte(head, '\n') + 1
		if k == 0 {
			k = len(head) // (readRequestHead ends every line with LF)
		}
		line := head[:k]
		head = head[k:]
		name, _, _ := bytes.Cut(line, []byte{':'})
		end := "\n"
		if bytes.HasSuffix(line, []byte("\r\n")) {
			end = "\r\n"
		}
		switch {
		case i > 0 && len(head) == 0 && !closed:
			out = append(out, "Connection: close"+end...)
			out = append(out, line...)
		case i > 0 && strings.EqualFold(string(name), "connection"):
			if !closed {
				out = append(out, "Connection: close"+end...)
				closed = true
			}
		default:
			out = append(out, line...)
		}
	}
	return out
}

// discardRest reads what the client sends after a request with a body
// and forwards none of it, until the client closes or soon after the
// server has: a client that pipelined another request sees the server
// close the connection, and sends it again on a new one.
func (c *tcpConn) discardRest(br *bufio.Reader, serverDone <-chan struct{}) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-serverDone:
			_ = c.downConn.SetReadDeadline(time.Now().Add(2 * time.Second))
		case <-stop:
		}
	}()
	_, _ = io.Copy(io.Discard, br)
}

// refuseUnread refuses bytes the guard could not read as a request: on a
// connection's first flight, as a protocol the guard does not read (a
// tcp:// rule would let it through); later, as a malformed request. A
// client whose first byte no request line starts with gets no answer.
func (c *tcpConn) refuseUnread(br *bufio.Reader, err error, first bool) error {
	where := hostPort(c.ev.Host, c.port)
	var he headError
	switch {
	case errors.Is(err, errH2):
		return c.refuseHTTP(br, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: %v", where, err))
	case !errors.As(err, &he):
		// The client closed before a whole request.
		return c.deny(FromHTTP, c.ev.Host, ReasonHTTPMalformed, fmt.Sprintf("%s: an incomplete HTTP request: %v", where, err))
	case first && errors.Is(err, errBinary):
		return c.deny(FromAddr, c.ev.Host, ReasonProtocol, fmt.Sprintf("%s: the first bytes are neither a TLS ClientHello, an HTTP/1.x request nor an SSH identification line; %s", where, c.tcpHint()))
	case first:
		return c.refuseHTTP(br, c.ev.Host, ReasonProtocol, fmt.Sprintf("%s: the first bytes are neither a TLS ClientHello, an HTTP/1.x request nor an SSH identification line (%v); %s", where, err, c.tcpHint()))
	}
	return c.refuseHTTP(br, c.ev.Host, ReasonHTTPMalformed, fmt.Sprintf("%s: malformed HTTP request refused: %v", where, err))
}

// errBinary: a byte that no request line starts with (not a token).
var errBinary = headError("a byte that no HTTP request line starts with")

// refuseHTTP records a denial and answers it with a 403 whose body says
// why.
func (c *tcpConn) refuseHTTP(br *bufio.Reader, host, reason, why string) error {
	err := c.deny(FromHTTP, host, reason, why)
	body := "cordon: network_denied: " + why + "\n"
	_, _ = fmt.Fprintf(c.downConn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	// Read what the client still sends, so that closing does not reset
	// the connection before it reads the answer.
	closeWrite(c.downConn)
	_ = c.downConn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.Copy(io.Discard, br)
	return err
}

// readTrailers reads a chunked body's trailer fields through the blank
// line, as strictly as a head's fields.
func readTrailers(br *bufio.Reader) ([]byte, error) {
	var t []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(t)+len(line) > maxHead {
			return nil, framingError("trailers too large")
		}
		if err != nil {
			return nil, err
		}
		t = append(t, line...)
		if string(line) == "\r\n" || string(line) == "\n" {
			return t, nil
		}
		if _, _, err := parseField(line); err != nil {
			return nil, framingError(fmt.Sprintf("trailer refused: %v", err))
		}
	}
}

// hasToken reports whether a comma-separated list holds token t.
func hasToken(list, t string) bool {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == t {
			return true
		}
	}
	return false
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
			n, err := strconv.ParseUint(sz, 16, 62)
			if err != nil || strings.TrimLeft(sz, "0123456789abcdefABCDEF") != "" {
				return framingError(fmt.Sprintf("bad chunk size %q", sz))
			}
			if n == 0 {
				// Trailers, through the blank line.
				t, err := readTrailers(br)
				if err != nil {
					return err
				}
				w, err := up.Write(t)
				out.Add(int64(w))
				return err
			}
			if err := copyN(up, br, int64(n), out); err != nil {
				return err
			}
			// The chunk's CRLF, checked: a server that ends the chunk
			// elsewhere would read the next bytes as another request.
			crlf, err := br.Peek(2)
			if err != nil {
				return err
			}
			if string(crlf) != "\r\n" {
				return framingError("a chunk not ended by CRLF")
			}
			if err := copyN(up, br, 2, out); err != nil {
				return err
			}
		}
	}
	if req.ContentLength > 0 {
		return copyN(up, br, req.ContentLength, out)
	}
	return nil
}

// framingError: a request body whose framing the guard cannot follow.
type framingError string

func (e framingError) Error() string { return string(e) }

func copyN(w io.Writer, r io.Reader, n int64, out *atomic.Int64) error {
	k, err := io.CopyN(w, r, n)
	out.Add(k)
	return err
}

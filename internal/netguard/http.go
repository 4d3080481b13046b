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

// emptyLines reads the empty lines a client may send before a request
// (servers skip them), to be forwarded with the request once it is
// allowed; it returns an error at the end of the stream.
func emptyLines(br *bufio.Reader) ([]byte, error) {
	var lines []byte
	for {
		b, err := br.Peek(1)
		if err != nil {
			return nil, err
		}
		if b[0] != '\r' && b[0] != '\n' {
			return lines, nil
		}
		if len(lines) >= maxHead {
			return nil, errors.New("too many empty lines")
		}
		c, _ := br.ReadByte()
		lines = append(lines, c)
	}
}

// ambiguousFraming says what makes a request head's length ambiguous
// (both Transfer-Encoding and Content-Length, two different
// Content-Lengths, a folded header line), or "".
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

// httpLoop checks the Host of every request on a plain HTTP connection and
// forwards each request's bytes as they were sent. A refused request gets
// a 403 whose body says why, and the connection ends. After a CONNECT or
// an Upgrade request it returns again: what follows is decided afresh.
func (c *tcpConn) httpLoop(br *bufio.Reader, up net.Conn, out *atomic.Int64) (again bool, err error) {
	for {
		lead, err := emptyLines(br)
		if err != nil {
			return false, nil
		}
		head, err := readHead(br)
		if err != nil {
			return false, c.deny(FromHTTP, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: unreadable HTTP request: %v", hostPort(c.ev.Host, c.port), err))
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return false, c.deny(FromHTTP, c.ev.Host, ReasonHTTPHost, fmt.Sprintf("%s: unreadable HTTP request: %v", hostPort(c.ev.Host, c.port), err))
		}
		if why := ambiguousFraming(head); why != "" {
			// The server could read another request where the guard
			// reads a body, and that request's Host would go unchecked.
			return false, c.deny(FromHTTP, req.Host, ReasonHTTPFraming, fmt.Sprintf("%s: HTTP request with %s refused: its end is ambiguous", hostPort(c.ev.Host, c.port), why))
		}
		host := req.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		name := normalizeName(host)
		r, why := nameDecision(c.p.rules, name, c.port)
		if r.Text == "" {
			if name == "" {
				why = fmt.Sprintf("HTTP Host %q is not an allowed host name; allowed: %s", req.Host, list(c.p.rules))
			}
			err := c.deny(FromHTTP, req.Host, ReasonHTTPHost, why)
			body := "cordon: network_denied: " + why + "\n"
			_, _ = fmt.Fprintf(c.downConn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			// Read what the client still sends, so that closing does not
			// reset the connection before it reads the answer.
			closeWrite(c.downConn)
			_ = c.downConn.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = io.Copy(io.Discard, br)
			return false, err
		}
		c.ev.Host, c.ev.HostFrom, c.ev.Rule = name, FromHTTP, r.Text
		n, err := up.Write(append(lead, head...))
		out.Add(int64(n))
		if err != nil {
			return false, nil
		}
		if err := forwardBody(br, up, req, out); err != nil {
			var fe framingError
			if errors.As(err, &fe) {
				// The server could read what follows as another request.
				return false, c.deny(FromHTTP, name, ReasonHTTPFraming, fmt.Sprintf("%s: HTTP request body refused: %v", hostPort(name, c.port), err))
			}
			return false, nil
		}
		if req.Method == http.MethodConnect || req.Header.Get("Upgrade") != "" {
			return true, nil
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
			n, err := strconv.ParseUint(sz, 16, 62)
			if err != nil || strings.TrimLeft(sz, "0123456789abcdefABCDEF") != "" {
				return framingError(fmt.Sprintf("bad chunk size %q", sz))
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

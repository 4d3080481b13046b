package netguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
)

// maxSSHIdent is the longest SSH identification line, CR LF included
// (RFC 4253 4.2).
const maxSSHIdent = 255

// startsSSH reports whether the client's first bytes are "SSH-", waiting
// only while they could still be.
func startsSSH(br *bufio.Reader) bool {
	const prefix = "SSH-"
	for n := 1; n <= len(prefix); n++ {
		b, err := br.Peek(n)
		if err != nil || b[n-1] != prefix[n-1] {
			return false
		}
	}
	return true
}

// sshIdent checks an SSH client's identification line strictly (RFC 4253
// 4.2): "SSH-2.0-" or "SSH-1.99-", a software version of visible ASCII,
// at most one space and a comment of visible ASCII, then CR LF (or a bare
// LF), 255 bytes at most. Such a line has at most one space, so no HTTP
// server reads it as a request (which needs two, or GET for HTTP/0.9),
// whatever it splits words on: the guard lets git over ssh reach an
// allowed host without a tcp:// rule, and no other name can be asked of
// the server through it.
func sshIdent(line []byte) error {
	if len(line) > maxSSHIdent {
		return fmt.Errorf("an SSH identification line longer than %d bytes", maxSSHIdent)
	}
	l, err := lineEnd(line)
	if err != nil {
		return err
	}
	rest, ok := bytes.CutPrefix(l, []byte("SSH-2.0-"))
	if !ok {
		rest, ok = bytes.CutPrefix(l, []byte("SSH-1.99-"))
	}
	if !ok {
		return fmt.Errorf("%q is not an SSH-2.0 identification line", clip(l))
	}
	soft, comment, hasComment := bytes.Cut(rest, []byte{' '})
	if len(soft) == 0 || !visible(soft) || hasComment && (len(comment) == 0 || !visible(comment)) {
		return fmt.Errorf("SSH identification line %q is not SSH-2.0-version[ comment]", clip(l))
	}
	return nil
}

// visible reports whether b is all visible ASCII (no space).
func visible(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// checkSSH reads an SSH client's identification line, checks it and
// forwards it; what follows is SSH's binary packets, forwarded as they
// come (the server has read a line no HTTP server would take).
func (c *tcpConn) checkSSH(br *bufio.Reader, up net.Conn, out *atomic.Int64) error {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = fmt.Errorf("an SSH identification line longer than %d bytes", maxSSHIdent)
	}
	if err == nil {
		err = sshIdent(line)
	}
	if err != nil {
		return c.deny(FromAddr, c.ev.Host, ReasonProtocol, fmt.Sprintf("%s: %v; %s", hostPort(c.ev.Host, c.port), err, c.tcpHint()))
	}
	n, err := up.Write(line)
	out.Add(int64(n))
	return err
}

// webSocketFrame reports whether the client's next bytes start a masked
// WebSocket frame (RFC 6455 5.2), as a client sends after an Upgrade to
// websocket: no reserved bits but RSV1 (compression), a defined opcode,
// FIN on a control frame, and the mask bit, which puts a byte of 0x80 or
// more second; so no server reads them as a request line's method. U+0085
// and U+00A0, which Python's str.split takes for spaces, are refused there
// after a first byte that is a token.
func webSocketFrame(br *bufio.Reader) bool {
	b, err := br.Peek(2)
	if err != nil {
		return false
	}
	op := b[0] & 0x0f
	switch {
	case b[0]&0x30 != 0, op > 2 && op < 8, op > 10, op >= 8 && b[0]&0x80 == 0, b[1]&0x80 == 0:
		return false
	case isToken(b[0]) && (b[1] == 0x85 || b[1] == 0xa0):
		return false
	}
	return true
}

// tcpHint says how to allow a port that carries another protocol.
func (c *tcpConn) tcpHint() string {
	name := c.ev.Host
	if len(c.names) > 0 {
		name = c.names[0]
	}
	return fmt.Sprintf("cordon reads TLS, HTTP/1.x and SSH only; if %s carries another protocol, allow it as %q", hostPort(name, c.port), "tcp://"+hostPort(name, c.port))
}

package netguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// requestHead is one HTTP/1.x request head as the guard reads it: strictly,
// by RFC 9112, so that no server can read a request line or a Host the
// guard did not.
type requestHead struct {
	method, target, version string
	// authority is the host[:port] of an absolute-form or authority-form
	// (CONNECT) target; "" for origin-form and asterisk-form.
	authority string
	// hosts are the values of every Host field, in order.
	hosts []string
	// upgrade is the Upgrade fields' values, lower-case, comma-joined.
	upgrade string
}

// headError says why the guard cannot read a request head.
type headError string

func (e headError) Error() string { return string(e) }

// errH2 is HTTP/2's preface, which the guard cannot follow in clear text.
var errH2 = headError("HTTP/2 without TLS hides the host name; use https or HTTP/1.1")

// lineEnd strips the line ending: CRLF, or a bare LF, which Go's, nginx's
// and Python's servers all take for one (RFC 9112 2.2 lets a recipient).
// Accepting it is safe because the guard then splits a head at every LF,
// at least as finely as any server: every line a server reads starts
// where a line the guard read starts. A CR anywhere else (which some
// servers take for a line end and others keep) is refused.
func lineEnd(line []byte) ([]byte, error) {
	switch {
	case bytes.HasSuffix(line, []byte("\r\n")):
		line = line[:len(line)-2]
	case bytes.HasSuffix(line, []byte("\n")):
		line = line[:len(line)-1]
	default:
		return nil, headError("a line without an end")
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, headError("a CR that does not end a line")
	}
	return line, nil
}

// parseRequestLine reads "method SP request-target SP HTTP/1.x": one space
// each, no leading or trailing whitespace, no other separator (a vertical
// tab or form feed splits words for Python's server), a token method, a
// target of visible ASCII only.
func parseRequestLine(raw []byte) (requestHead, error) {
	var h requestHead
	line, err := lineEnd(raw)
	if err != nil {
		return h, err
	}
	method, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(method) == 0 || !allToken(method) {
		return h, headError(fmt.Sprintf("request line %q does not start with a method and one space", clip(line)))
	}
	target, version, ok := bytes.Cut(rest, []byte{' '})
	if !ok || len(target) == 0 {
		return h, headError(fmt.Sprintf("request line %q is not method SP target SP version", clip(line)))
	}
	for _, c := range target {
		if c <= ' ' || c >= 0x7f {
			return h, headError(fmt.Sprintf("request target %q has a byte that is not visible ASCII (%#02x)", clip(target), c))
		}
	}
	h.method, h.target, h.version = string(method), string(target), string(version)
	if len(version) != 8 || !bytes.HasPrefix(version, []byte("HTTP/")) || !isDigit(version[5]) || version[6] != '.' || !isDigit(version[7]) {
		return h, headError(fmt.Sprintf("request line %q does not end with an HTTP version", clip(line)))
	}
	if version[5] != '1' {
		if h.method == "PRI" && h.target == "*" && h.version == "HTTP/2.0" {
			return h, errH2
		}
		return h, headError(fmt.Sprintf("%s is not HTTP/1.x", h.version))
	}
	h.authority, err = targetAuthority(h.method, h.target)
	return h, err
}

// targetAuthority checks the target's form (RFC 9112 3.2) and returns the
// authority of an absolute-form or authority-form target.
func targetAuthority(method, target string) (string, error) {
	switch {
	case method == "CONNECT":
		if _, _, err := splitAuthority(target, true); err != nil {
			return "", err
		}
		return target, nil
	case target == "*":
		if method != "OPTIONS" {
			return "", headError("the target * is for OPTIONS only")
		}
		return "", nil
	case target[0] == '/':
		return "", nil
	}
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
		return "", headError(fmt.Sprintf("request target %q is neither a path nor an http:// or https:// URL", clip([]byte(target))))
	}
	if strings.IndexByte(target, '#') >= 0 {
		return "", headError("a request target with a fragment (#)")
	}
	auth := rest
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		auth = rest[:i]
	}
	if _, _, err := splitAuthority(auth, false); err != nil {
		return "", err
	}
	return auth, nil
}

// splitAuthority splits host[:port] (RFC 9110's uri-host and port, no
// userinfo); needPort: the port must be there (CONNECT's target).
func splitAuthority(a string, needPort bool) (host, port string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", headError(fmt.Sprintf("authority %q: %s", a, why))
	}
	hasPort := false
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return bad("an unclosed [")
		}
		if ip, err := netip.ParseAddr(a[1:end]); err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad("not an IPv6 address in brackets")
		}
		rest := a[end+1:]
		host = a[:end+1]
		if rest != "" {
			if rest[0] != ':' {
				return bad("text after ]")
			}
			port, hasPort = rest[1:], true
		}
	} else {
		host, port, hasPort = strings.Cut(a, ":")
		if host == "" {
			return bad("no host")
		}
		for i := 0; i < len(host); i++ {
			if c := host[i]; !isToken(c) || c == '%' {
				return bad(fmt.Sprintf("%q cannot be in a host name", c))
			}
		}
	}
	if hasPort && (port == "" || len(port) > 5 || strings.TrimLeft(port, "0123456789") != "") {
		return bad("the port is not a number")
	}
	if needPort && !hasPort {
		return bad("CONNECT needs host:port")
	}
	return host, port, nil
}

// parseField reads one header field line: a token name, a colon with no
// space before it, a value of visible bytes, spaces and tabs. A line that
// starts with whitespace (obsolete folding) is refused.
func parseField(raw []byte) (name, value string, err error) {
	line, err := lineEnd(raw)
	if err != nil {
		return "", "", err
	}
	if line[0] == ' ' || line[0] == '\t' {
		return "", "", headError("a folded header line")
	}
	n, v, ok := bytes.Cut(line, []byte{':'})
	if !ok || len(n) == 0 || !allToken(n) {
		return "", "", headError(fmt.Sprintf("header line %q is not name: value", clip(line)))
	}
	v = bytes.Trim(v, " \t")
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return "", "", headError(fmt.Sprintf("header %s has a control byte %#02x", n, c))
		}
	}
	return strings.ToLower(string(n)), string(v), nil
}

// addField records what the guard decides on from one field.
func (h *requestHead) addField(name, value string) {
	switch name {
	case "host":
		h.hosts = append(h.hosts, value)
	case "upgrade":
		if h.upgrade != "" {
			h.upgrade += ","
		}
		h.upgrade += strings.ToLower(value)
	}
}

// readRequestHead reads one request head from br through its blank line,
// strictly: the request line is judged as soon as it is complete, so a
// client of another protocol is refused without waiting for a blank line
// it would never send.
func readRequestHead(br *bufio.Reader) ([]byte, requestHead, error) {
	var head []byte
	var h requestHead
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(head)+len(line) > maxHead {
			return nil, h, headError("request head too large")
		}
		if err != nil {
			return nil, h, err
		}
		first := len(head) == 0
		head = append(head, line...)
		if first {
			if h, err = parseRequestLine(line); err != nil {
				return nil, h, err
			}
			continue
		}
		if string(line) == "\r\n" || string(line) == "\n" {
			return head, h, nil
		}
		name, value, err := parseField(line)
		if err != nil {
			return nil, h, err
		}
		h.addField(name, value)
	}
}

// parseHead reads a whole request head from b as readRequestHead reads
// one from a connection (for tests and the fuzz target); rest is what
// follows its blank line.
func parseHead(b []byte) (h requestHead, rest []byte, err error) {
	br := bufio.NewReaderSize(bytes.NewReader(b), maxHead+16)
	head, h, err := readRequestHead(br)
	if err != nil {
		return h, nil, err
	}
	return h, b[len(head):], nil
}

// requestName decides which host a request names: the authority of its
// target, or else its Host; every Host field must agree with the target's
// authority (name, and port when both give one), and there may be only
// one (RFC 9112 3.2: a server must refuse more). A server that routes by
// the Host header and one that routes by the target then pick the same
// site.
func requestName(h requestHead) (string, error) {
	if len(h.hosts) > 1 {
		return "", headError(fmt.Sprintf("a request with %d Host headers (%s)", len(h.hosts), strings.Join(quoteAll(h.hosts), ", ")))
	}
	hostField := ""
	if len(h.hosts) == 1 {
		hostField = h.hosts[0]
		if hostField == "" && h.authority == "" {
			return "", headError("an empty Host header")
		}
	}
	if h.authority == "" {
		if len(h.hosts) == 0 {
			return "", headError("a request without a Host header")
		}
		host, _, err := splitAuthority(hostField, false)
		return host, err
	}
	th, tp, _ := splitAuthority(h.authority, false)
	if hostField == "" {
		return th, nil
	}
	hh, hp, err := splitAuthority(hostField, false)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(strings.TrimSuffix(hh, "."), strings.TrimSuffix(th, ".")) || hp != "" && tp != "" && hp != tp {
		return "", headError(fmt.Sprintf("the request target names %s but its Host header names %s", h.authority, hostField))
	}
	return th, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// clip shortens text for a message.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func allToken(b []byte) bool {
	for _, c := range b {
		if !isToken(c) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isToken reports whether ch may be in an HTTP method or field name (RFC
// 9110's tchar).
func isToken(ch byte) bool {
	return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0
}

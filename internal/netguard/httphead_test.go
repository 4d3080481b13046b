package netguard

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"unicode"
)

// TestRequestHeadStrict: the guard reads a request head as RFC 9112 writes
// it, and decides on one name that the target's authority and every Host
// field agree on; what a lenient server could read otherwise is refused.
func TestRequestHeadStrict(t *testing.T) {
	for _, tt := range []struct {
		name, head string
		want       string // the name decided; "" when refused
		err        string // a word of the refusal
	}{
		{"origin form", "GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", ""},
		{"bare LF", "GET /x HTTP/1.1\nHost: allowed.test\n\n", "allowed.test", ""},
		{"host with port", "GET / HTTP/1.1\r\nHost: allowed.test:8081\r\n\r\n", "allowed.test", ""},
		{"absolute form agreeing", "GET http://allowed.test:8081/x HTTP/1.1\r\nHost: allowed.test:8081\r\n\r\n", "allowed.test", ""},
		{"absolute form, Host without port", "GET http://Allowed.test:8081/x HTTP/1.1\r\nhost: allowed.test\r\n\r\n", "Allowed.test", ""},
		{"absolute form, no Host (HTTP/1.0)", "GET http://allowed.test/ HTTP/1.0\r\n\r\n", "allowed.test", ""},
		{"connect", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", "allowed.test", ""},
		{"options *", "OPTIONS * HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", ""},
		{"lower-case method", "get / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "allowed.test", ""},
		{"absolute form, other Host", "GET http://allowed.test:8081/x HTTP/1.1\r\nHost: other.test\r\n\r\n", "", "names allowed.test:8081 but its Host header names other.test"},
		{"absolute form, other Host port", "GET http://allowed.test:8081/x HTTP/1.1\r\nHost: allowed.test:9\r\n\r\n", "", "Host header"},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n", "", "2 Host headers"},
		{"two equal Hosts", "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: allowed.test\r\n\r\n", "", "2 Host headers"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", "", "without a Host"},
		{"empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", "", "empty Host"},
		{"userinfo in target", "GET http://allowed.test@other.test/ HTTP/1.1\r\n\r\n", "", "cannot be in a host"},
		{"userinfo in Host", "GET / HTTP/1.1\r\nHost: allowed.test@other.test\r\n\r\n", "", "cannot be in a host"},
		{"leading space", " GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", "", "method"},
		{"leading tab", "\tGET / HTTP/1.1\r\nHost: other.test\r\n\r\n", "", "method"},
		{"vertical tabs", "GET\v/\vHTTP/1.1\r\nHost: other.test\r\n\r\n", "", "method"},
		{"form feed in target", "GET /\fx HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "visible ASCII"},
		{"two spaces", "GET  / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "not method SP target"},
		{"trailing space", "GET / HTTP/1.1 \r\nHost: allowed.test\r\n\r\n", "", "version"},
		{"NEL in target", "GET /\xc2\x85x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "visible ASCII"},
		{"no version", "GET /\r\nHost: allowed.test\r\n\r\n", "", "not method SP target"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "", "HTTP/2"},
		{"HTTP/3.1", "GET / HTTP/3.1\r\nHost: allowed.test\r\n\r\n", "", "not HTTP/1.x"},
		{"lower-case version", "GET / http/1.1\r\nHost: allowed.test\r\n\r\n", "", "version"},
		{"bare CR in request line", "GET / HTTP/1.1\rHost: other.test\r\n\r\n", "", "CR"},
		{"bare CR in a field", "GET / HTTP/1.1\r\nX: a\rHost: other.test\r\nHost: allowed.test\r\n\r\n", "", "CR"},
		{"folded Host", "GET / HTTP/1.1\r\nHost: allowed.test\r\n other.test\r\n\r\n", "", "folded"},
		{"space before colon", "GET / HTTP/1.1\r\nHost : other.test\r\n\r\n", "", "not name: value"},
		{"NUL in a value", "GET / HTTP/1.1\r\nHost: allowed.test\r\nX: a\x00b\r\n\r\n", "", "control"},
		{"ftp target", "GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "neither a path"},
		{"fragment", "GET http://allowed.test/#x HTTP/1.1\r\n\r\n", "", "fragment"},
		{"connect without port", "CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "host:port"},
		{"connect other Host", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n", "", "Host header"},
		{"star not OPTIONS", "GET * HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "", "OPTIONS only"},
		{"memcached", "get key\r\n", "", "not method SP target"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _, err := parseHead([]byte(tt.head))
			name := ""
			if err == nil {
				name, err = requestName(h)
			}
			switch {
			case tt.err == "" && (err != nil || name != tt.want):
				t.Fatalf("%q: name %q, %v; want %q", tt.head, name, err, tt.want)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("%q: name %q, %v; want a refusal saying %q", tt.head, name, err, tt.err)
			case tt.err != "" && !errors.As(err, new(headError)):
				t.Fatalf("%q: %v is not a headError", tt.head, err)
			}
		})
	}
}

// TestSSHIdentStrict: an SSH client's first line passes only in the form
// RFC 4253 gives it, which no HTTP server reads as a request.
func TestSSHIdentStrict(t *testing.T) {
	for _, ok := range []string{"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n", "SSH-2.0-Go\r\n", "SSH-2.0-JSCH-0.1.54\r\n", "SSH-1.99-x\n"} {
		if err := sshIdent([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"SSH-2.0-x / HTTP/1.1\r\n", "SSH-2.0- GET / HTTP/1.1\r\n", "SSH-2.0-x\vy z\r\n", "SSH-2.0-\r\n", "SSH-2.0-x \r\n",
		"SSH-3.0-x\r\n", "SSH-2.0-x\r", "SSH-2.0-x\ry\r\n", "SSH-2.0-" + strings.Repeat("a", 250) + "\r\n"} {
		if err := sshIdent([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestWebSocketFrameStart: after an Upgrade to websocket, the client's
// bytes pass unread only when they start a masked client frame.
func TestWebSocketFrameStart(t *testing.T) {
	for _, tt := range []struct {
		b    string
		want bool
	}{
		{"\x81\x85", true}, {"\x82\xfe", true}, {"\xc1\x80", true}, {"\x88\x82", true}, {"\x01\x85", true},
		{"\x81\x05", false}, {"GE", false}, {" G", false}, {"\x08\x80", false}, {"\x83\x80", false},
		{"\xa1\x80", false}, {"A\x85", false}, {"A\xa0", false}, {"A\x86", true},
	} {
		if got := webSocketFrame(bufio.NewReader(strings.NewReader(tt.b))); got != tt.want {
			t.Errorf("% x: %v; want %v", tt.b, got, tt.want)
		}
	}
}

// FuzzRequestHead: whatever head the strict reader accepts, Go's server
// reads the same (it parses, and its Host names the same host), and a
// lenient server that splits the request line on any whitespace (Python's
// http.server, which splits the line decoded as Latin-1 with str.split)
// sees the same three words; so no server picks a site the guard did not
// decide.
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test:8081/x HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://allowed.test:8081/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		" GET / HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET\v/\vHTTP/1.1\r\nHost: other.test\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
		"OPTIONS * HTTP/1.0\nHost: [::1]:80\n\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := parseHead(b)
		if err != nil {
			return
		}
		name, err := requestName(h)
		if err != nil {
			return
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		words := strings.FieldsFunc(latin1(bytes.TrimSuffix(line, []byte("\r"))), pythonSpace)
		if len(words) != 3 || words[0] != h.method || words[1] != h.target || words[2] != h.version {
			t.Fatalf("%q: a lenient server reads %q, the guard %q %q %q", b, words, h.method, h.target, h.version)
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			// Go refuses some heads the guard reads (a Transfer-Encoding
			// it does not support): the guard refuses them too.
			return
		}
		host := req.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if !strings.EqualFold(strings.Trim(host, "[]"), strings.Trim(name, "[]")) {
			t.Fatalf("%q: Go's server reads Host %q, the guard decides %q", b, req.Host, name)
		}
	})
}

// pythonSpace is str.isspace's whitespace in Latin-1: Unicode's, and the
// information separators U+001C to U+001F.
func pythonSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// BenchmarkRequestHead: what the strict reader costs a request (curl's
// head) on a connection's buffered reader, before it is forwarded.
func BenchmarkRequestHead(b *testing.B) {
	head := []byte("GET /some/path?q=1 HTTP/1.1\r\nHost: allowed.test:8081\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
	r := bytes.NewReader(head)
	br := bufio.NewReaderSize(r, maxHead)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(head)
		br.Reset(r)
		_, h, err := readRequestHead(br)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := requestName(h); err != nil {
			b.Fatal(err)
		}
	}
}

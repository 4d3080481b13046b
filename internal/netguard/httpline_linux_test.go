package netguard

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// TestGuardChecksEveryHTTPRequestLine: a plain HTTP request reaches the
// server only with an allowed Host, whatever its request line looks like
// (a method the guard does not know, a lower-case one, empty lines before
// it), however its bytes are spread over time (a first byte, a pause
// longer than the guard waits, the rest), and whatever came before it on
// the connection (CONNECT, an Upgrade the server did not take, a chunked
// body whose framing a server could read otherwise). Each refusal is a 403
// and a denial, and the server never answers for the unlisted host.
func TestGuardChecksEveryHTTPRequestLine(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	s := newSandboxNS(t, h, "allowed.test:80", "allowed.test:7")
	const other = `GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n`
	const allowed = `GET / HTTP/1.1\r\nHost: allowed.test\r\n`
	cases := []struct {
		name string
		send string // Python statements over the socket c
	}{
		{"unknown method", `c.sendall(b"XGET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"lower-case method", `c.sendall(b"get / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"empty line first", `c.sendall(b"\r\n` + other + `")`},
		{"first byte then a pause", `c.sendall(b"G"); time.sleep(1.5); c.sendall(b"ET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"method split by a pause", `c.sendall(b"XGE"); time.sleep(1.5); c.sendall(b"T /"); time.sleep(1.5); c.sendall(b" HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"unknown method, HTTP/1.2", `c.sendall(b"XGET / HTTP/1.2\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"unknown method, UTF-8 target", `c.sendall(b"XGET /\xc3\xa9 HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"unknown method, long target", `c.sendall(b"XGET /" + b"a"*70000 + b" HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")`},
		{"upgrade not taken", `c.sendall(b"` + allowed + `Upgrade: websocket\r\n\r\n` + other + `")`},
		{"connect", `c.sendall(b"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n` + other + `")`},
		{"chunk without CRLF", `c.sendall(b"POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nAXX\r\n0\r\n\r\n` + other + `")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(s.g.Denials())
			out, err := s.run("python3", "-c", `import socket,time
c=socket.create_connection(("allowed.test",80),timeout=20)
`+c.send+`
b=b""
try:
    while True:
        x=c.recv(4096)
        if not x: break
        b+=x
except OSError:
    pass
print(b.decode(errors="replace"))`)
			if err != nil {
				t.Fatalf("client: %v: %s", err, out)
			}
			if strings.Contains(out, "X-Test-Host: other.test") || slices.Contains(h.Served(), "other.test") {
				t.Fatalf("the server answered for other.test: %q (served %q)", out, h.Served())
			}
			d := s.g.Denials()
			want := []string{ReasonHTTPHost}
			switch {
			case strings.Contains(c.name, "chunk"):
				want = []string{ReasonHTTPFraming}
			case strings.Contains(c.name, "UTF-8") || strings.Contains(c.name, "long"):
				// Not a request the guard reads (a target of visible
				// ASCII, a head under 64 KiB): refused unread.
				want = []string{ReasonProtocol}
			}
			if len(d) <= before || !slices.Contains(want, d[len(d)-1].Reason) {
				t.Fatalf("no %s denial after %d: %+v (output %q)", want, before, d, out)
			}
			if !strings.Contains(c.name, "chunk") && !strings.Contains(c.name, "long") && !strings.Contains(out, "403 Forbidden") {
				t.Fatalf("no 403: %q", out)
			}
			t.Logf("%s: %s", c.name, d[len(d)-1].Detail)
		})
	}
	// Another protocol's line is refused at once, not held until a blank
	// line that never comes, and nothing reaches the server; a tcp://
	// rule lets it through as sent.
	memcached := func(s *sandboxNS, port int, shut string) (string, error) {
		return s.run("python3", "-c", fmt.Sprintf(`import socket
c=socket.create_connection(("allowed.test",%d),timeout=20); c.sendall(b"get key\r\n")%s
b=b""
while True:
    x=c.recv(100)
    if not x: break
    b+=x
print(b.decode(errors="replace"))`, port, shut))
	}
	rec := h.ServeRecorder(t)
	s2 := newSandboxNS(t, h, fmt.Sprintf("allowed.test:%d", rec.Port), "tcp://allowed.test:7")
	out, err := memcached(s2, rec.Port, "")
	if err != nil || !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, `allow it as "tcp://allowed.test:`) {
		t.Fatalf("a memcached line on a port read as HTTP: %q, %v", out, err)
	}
	s2.denial(t, ReasonProtocol)
	if got := rec.Got(); len(got) != 0 {
		t.Fatalf("the server received %q", got)
	}
	out, err = memcached(s2, 7, "; c.shutdown(socket.SHUT_WR)")
	if err != nil || strings.TrimSpace(out) != "get key" {
		t.Fatalf("echo through tcp://: %q, %v", out, err)
	}
}

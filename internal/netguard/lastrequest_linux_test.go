package netguard

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// TestGuardForwardsNothingAfterABody: on a plain HTTP connection, a
// request with a body (a length, chunks, Expect; HTTP/1.1 or 1.0) reaches
// the server with "Connection: close" in place of the client's Connection
// fields and its body byte for byte, and nothing the client sends after
// that body reaches the server: not a request for another host (which a
// server that ignores bodies would have read from the body), nor one for
// the allowed host. Requests without a body go on as sent.
func TestGuardForwardsNothingAfterABody(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	rec := h.ServeRecorder(t)
	s := newSandboxNS(t, h, fmt.Sprintf("allowed.test:%d", rec.Port))
	const smuggled = "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n"
	const after = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
	length := fmt.Sprintf("Content-Length: %d\r\n", len(smuggled))
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	cases := []struct {
		name, head, body string
		want             string // the head the server reads
	}{
		{"length", "GET / HTTP/1.1\r\nHost: allowed.test\r\n" + length + "\r\n", smuggled,
			"GET / HTTP/1.1\r\nHost: allowed.test\r\n" + length + "Connection: close\r\n\r\n"},
		{"expect", "GET / HTTP/1.1\r\nHost: allowed.test\r\nExpect: 100-continue\r\nConnection: keep-alive\r\n" + length + "\r\n", smuggled,
			"GET / HTTP/1.1\r\nHost: allowed.test\r\nExpect: 100-continue\r\nConnection: close\r\n" + length + "\r\n"},
		{"chunked", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n", chunk,
			"POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"},
		{"HTTP/1.0 GET with a body", "GET / HTTP/1.0\r\nHost: allowed.test\r\nConnection: keep-alive\r\n" + length + "\r\n", smuggled,
			"GET / HTTP/1.0\r\nHost: allowed.test\r\nConnection: close\r\n" + length + "\r\n"},
	}
	// The client sends it all, then closes its side and reads until the
	// guard closes the connection (after the server has).
	send := func(payload string) {
		t.Helper()
		out, err := s.run("python3", "-c", `import socket, sys
c = socket.create_connection(("allowed.test", int(sys.argv[1])), timeout=20)
c.sendall(bytes.fromhex(sys.argv[2])); c.shutdown(socket.SHUT_WR)
while c.recv(4096): pass`, fmt.Sprint(rec.Port), hex.EncodeToString([]byte(payload)))
		if err != nil {
			t.Fatalf("client: %v: %s", err, out)
		}
	}
	var want strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(rec.Got())
			send(c.head + c.body + smuggled + after)
			if got := string(rec.Got()[before:]); got != c.want+c.body {
				t.Fatalf("the server received\n%q\nwant\n%q", got, c.want+c.body)
			}
		})
		want.WriteString(c.want + c.body)
	}
	// Without a body, the connection goes on, byte for byte.
	before := len(rec.Got())
	send(after + after)
	if got := string(rec.Got()[before:]); got != after+after {
		t.Fatalf("keep-alive without a body: the server received %q", got)
	}
	want.WriteString(after + after)
	// Every connection was allowed, counting only what was forwarded.
	s.g.Close()
	if d := s.g.Denials(); len(d) != 0 {
		t.Fatalf("denials: %+v", d)
	}
	var out int64
	for _, e := range s.events() {
		if e.Proto == "tcp" && e.Host == "allowed.test" {
			out += e.BytesOut
		}
	}
	if out != int64(want.Len()) {
		t.Fatalf("the events count %d bytes out; the server received %d", out, want.Len())
	}
}

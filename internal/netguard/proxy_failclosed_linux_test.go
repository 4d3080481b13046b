package netguard

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// tunnel opens a CONNECT tunnel through the proxy to allowed.test:port,
// sends payload in it, half-closes it and returns what comes back until
// the proxy or the server closes it.
func (tp *testProxy) tunnel(t *testing.T, port int, payload string) string {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(tp.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	hp := fmt.Sprintf("allowed.test:%d", port)
	if _, err := io.WriteString(c, "CONNECT "+hp+" HTTP/1.1\r\nHost: "+hp+"\r\n"+tp.auth()+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200 ") {
		t.Fatalf("CONNECT %s: %q, %v", hp, line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	// The client is done: a server that waits for more (the recorders)
	// sees the end and closes.
	_ = c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(br)
	return string(b)
}

// TestProxyTunnelFailsClosed: in a CONNECT tunnel to an allowed name (the
// macOS path; the Guard reads a connection the same way), an absolute-form
// request whose Host names another site, a request line a lenient server
// splits on any whitespace, and bytes that are neither TLS, HTTP/1.x nor
// SSH are refused, and the other site is not served; a tcp:// rule's port
// passes bytes as sent; an SSH client's line and packets pass to an ssh
// server with a plain rule. Root, and rootless in hack/test-rootless.sh.
func TestProxyTunnelFailsClosed(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	v := h.ServeVhosts(t)
	rec, raw := h.ServeRecorder(t), h.ServeRecorder(t)
	ssh := h.ServeSSH(t, 0)
	tp := newTestProxy(t, h, fmt.Sprintf("allowed.test:%d", v.Port), fmt.Sprintf("allowed.test:%d", rec.Port),
		fmt.Sprintf("tcp://allowed.test:%d", raw.Port), fmt.Sprintf("allowed.test:%d", ssh.Port))
	const other = "Host: other.test\r\nConnection: close\r\n\r\n"
	target := fmt.Sprintf("http://allowed.test:%d/", v.Port)
	if got := tp.tunnel(t, v.Port, "GET "+target+" HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"); !strings.Contains(got, "the content of allowed.test") {
		t.Fatalf("an allowed absolute-form request: %q", got)
	}
	for _, c := range []struct{ name, payload, reason string }{
		{"absolute form, other Host", "GET " + target + " HTTP/1.1\r\n" + other, ReasonHTTPHost},
		{"leading space", " GET / HTTP/1.1\r\n" + other, ReasonProtocol},
		{"vertical tabs", "GET\v/\vHTTP/1.1\r\n" + other, ReasonProtocol},
		{"keep-alive, then absolute form", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET " + target + " HTTP/1.1\r\n" + other, ReasonHTTPHost},
		{"chunks in HTTP/1.0", "POST / HTTP/1.0\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n3e\r\nGET / HTTP/1.1\r\n" + other + "\r\n0\r\n\r\n", ReasonHTTPFraming},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(tp.Denials())
			got := tp.tunnel(t, v.Port, c.payload)
			if d := tp.Denials(); len(d) != before+1 || d[before].Reason != c.reason {
				t.Fatalf("denials %+v; want one %s (answer %q)", d[before:], c.reason, got)
			}
			if strings.Contains(got, "the content of other.test") || slices.Contains(v.Served(), "other.test") {
				t.Fatalf("the other site was served: %q, %q", got, v.Served())
			}
		})
	}
	t.Run("unparsed first flight", func(t *testing.T) {
		before := len(tp.Denials())
		tp.tunnel(t, rec.Port, "\x00\x01binary\r\n\r\n")
		d := tp.Denials()
		if len(d) != before+1 || d[before].Reason != ReasonProtocol || !strings.Contains(d[before].Detail, fmt.Sprintf(`"tcp://allowed.test:%d"`, rec.Port)) {
			t.Fatalf("denials %+v; want one %s naming the tcp:// fix", d[before:], ReasonProtocol)
		}
		time.Sleep(200 * time.Millisecond)
		if got := rec.Got(); len(got) != 0 {
			t.Fatalf("the server received %q", got)
		}
	})
	t.Run("tcp rule", func(t *testing.T) {
		payload := "\x00\x01 GET\v/\vHTTP/1.1\r\n" + other
		tp.tunnel(t, raw.Port, payload)
		deadline := time.Now().Add(10 * time.Second)
		for string(raw.Got()) != payload && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if got := raw.Got(); string(got) != payload {
			t.Fatalf("the server received %q; want %q", got, payload)
		}
	})
	t.Run("ssh", func(t *testing.T) {
		// An identification line, then a first packet shaped as a
		// KEXINIT: length 12, 10 bytes of padding, message type 20.
		payload := append([]byte{0, 0, 0, 12, 10, 20}, make([]byte, 10)...)
		got := tp.tunnel(t, ssh.Port, "SSH-2.0-cordon_test_client\r\n"+string(payload))
		if !strings.HasPrefix(got, "SSH-2.0-cordon_test_server\r\n") || !strings.Contains(got, ssh.Text) {
			t.Fatalf("the server's answer: %q", got)
		}
		if ident, msg := ssh.Seen(); ident != "SSH-2.0-cordon_test_client\r\n" || msg != 20 {
			t.Fatalf("the server read %q and a packet of type %d", ident, msg)
		}
	})
	for _, d := range tp.Denials() {
		if d.Reason == ReasonProtocol && d.Port == uint16(ssh.Port) {
			t.Fatalf("ssh refused: %+v", d)
		}
	}
}

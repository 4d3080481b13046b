package linux_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// The network guard fails closed (issue 21, finding 7): on a connection
// made to an allowed name, what the client sends is a TLS ClientHello, an
// HTTP/1.x request read strictly whose target and Host agree, or an SSH
// identification line; anything else is refused unless a tcp:// rule says
// the port carries another protocol. Each test runs real clients in a
// sandbox against real servers, as root and as an unprivileged user
// (hack/test-rootless.sh runs every test named NetworkAllowList).

// sendScript sends argv[3] (hex) to argv[1]:argv[2] from the sandbox,
// prints what comes back, and fails unless an HTTP 200 came back and no
// 403: a refused request fails the command, as a client's would.
const sendScript = `import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
c.sendall(bytes.fromhex(sys.argv[3]))
b = b""
try:
    while True:
        x = c.recv(65536)
        if not x:
            break
        b += x
except OSError:
    pass
sys.stdout.write(b.decode("latin-1"))
sys.exit(0 if b.startswith(b"HTTP/1.1 200") and b"403 Forbidden" not in b else 3)
`

// send sends raw bytes to allowed.test:port from the sandbox.
func (n *netSandbox) send(port int, payload string) runOut {
	n.t.Helper()
	return n.run("python3", "-c", sendScript, "allowed.test", fmt.Sprint(port), hex.EncodeToString([]byte(payload)))
}

// sendDirect sends raw bytes to the test host's port from the test itself,
// around the guard, and returns the answer: it shows what a server does
// with bytes the guard refuses.
func sendDirect(t *testing.T, h *nettest.Host, port int, payload string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(h.Addr.String(), fmt.Sprint(port)), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// newVhostSandbox is a sandbox allowed allowed.test on the port of a
// lenient server with virtual hosts (Python's http.server) on the test
// host, which serves allowed.test and other.test.
func newVhostSandbox(t *testing.T) (*netSandbox, *nettest.Vhosts) {
	t.Helper()
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	v := n.h.ServeVhosts(t)
	n.sb.Network = spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("allowed.test:%d", v.Port)}}
	return n, v
}

// refusedUnserved asserts a refusal typed network_denied with reason, that
// the other site's content did not reach the client, and that the server
// has not served it since its first direct requests.
func (n *netSandbox) refusedUnserved(o runOut, v *nettest.Vhosts, direct int, reason, want string) {
	n.t.Helper()
	n.denied(o, reason, want)
	served := v.Served()[direct:]
	if strings.Contains(o.stdout, "the content of other.test") || slices.ContainsFunc(served, func(s string) bool { return strings.HasPrefix(s, "other.test") }) {
		n.t.Fatalf("the other site was served: client read %q, server served %q", o.stdout, served)
	}
}

// TestIntegrationNetworkAllowListHostAgreesWithTarget: an absolute-form
// request to an allowed name whose Host header names another site (which
// a server that routes by the header serves) is refused, typed and
// audited, and the other site's content is not served; so are two Host
// headers, on the first request of a connection and on a later one.
func TestIntegrationNetworkAllowListHostAgreesWithTarget(t *testing.T) {
	n, v := newVhostSandbox(t)
	target := fmt.Sprintf("http://allowed.test:%d/x", v.Port)
	attack := "GET " + target + " HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n"
	// The server is lenient: sent around the guard, the attack works.
	if got := sendDirect(t, n.h, v.Port, attack); !strings.Contains(got, "the content of other.test") {
		t.Fatalf("the server does not route by Host, so the test proves nothing: %q", got)
	}
	direct := len(v.Served())
	o := n.send(v.Port, "GET "+target+" HTTP/1.1\r\nHost: allowed.test:"+fmt.Sprint(v.Port)+"\r\nConnection: close\r\n\r\n")
	if o.res.FailureType != runner.FailureNone || !strings.Contains(o.stdout, "the content of allowed.test") {
		t.Fatalf("an absolute-form request whose Host agrees: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}
	served := v.Served()[direct:]
	keepAlive := "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
	for _, c := range []struct{ name, payload, want string }{
		{"absolute form, other Host", attack, fmt.Sprintf("the request target names allowed.test:%d but its Host header names other.test", v.Port)},
		{"two Host headers", "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\nConnection: close\r\n\r\n", "2 Host headers"},
		{"keep-alive, then absolute form", keepAlive + attack, "its Host header names other.test"},
		{"keep-alive, then two Hosts", keepAlive + "GET / HTTP/1.1\r\nhost: other.test\r\nHOST: allowed.test\r\n\r\n", "2 Host headers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n.t = t
			n.refusedUnserved(n.send(v.Port, c.payload), v, direct, netguard.ReasonHTTPHost, c.want)
		})
	}
	n.t = t
	if got := v.Served()[direct:]; !slices.Equal(got[:len(served)], served) || len(got) != len(served)+2 {
		t.Fatalf("served %q; want %q and the two keep-alive requests for allowed.test", got, served)
	}
}

// TestIntegrationNetworkAllowListStrictRequestLine: request lines a lenient
// server splits on any whitespace (a leading space, vertical tabs) are
// refused unread on a connection's first flight, and later on one; the
// other site is not served and no byte of them reaches the server.
func TestIntegrationNetworkAllowListStrictRequestLine(t *testing.T) {
	n, v := newVhostSandbox(t)
	rec := n.h.ServeRecorder(t)
	n.sb.Network.Allow = append(n.sb.Network.Allow, fmt.Sprintf("allowed.test:%d", rec.Port))
	const other = "Host: other.test\r\nConnection: close\r\n\r\n"
	cases := []struct{ name, payload, reason, want string }{
		{"leading space", " GET / HTTP/1.1\r\n" + other, netguard.ReasonProtocol, "neither a TLS ClientHello, an HTTP/1.x request nor an SSH identification line"},
		{"vertical tabs", "GET\v/\vHTTP/1.1\r\n" + other, netguard.ReasonProtocol, "does not start with a method and one space"},
		{"leading tab", "\tGET / HTTP/1.1\r\n" + other, netguard.ReasonProtocol, "neither a TLS ClientHello"},
		{"form feed before the version", "GET /\fHTTP/1.1\r\n" + other, netguard.ReasonProtocol, "is not method SP target SP version"},
		{"ssh line hiding a request", "SSH-2.0-x / HTTP/1.1\r\n" + other, netguard.ReasonProtocol, "is not SSH-2.0-version[ comment]"},
		{"leading space after a request", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n GET / HTTP/1.1\r\n" + other, netguard.ReasonHTTPMalformed, "malformed HTTP request refused"},
	}
	for _, c := range cases {
		// The server is lenient: sent around the guard, the line is
		// served as other.test's (Python's server answers the ssh line
		// 501, and that case shows the guard does not rely on it).
		if got := sendDirect(t, n.h, v.Port, c.payload); !strings.Contains(got, "the content of other.test") && !strings.HasPrefix(c.name, "ssh") {
			t.Fatalf("%s: the server does not serve it, so the test proves nothing: %q", c.name, got)
		}
	}
	direct := len(v.Served())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n.t = t
			n.refusedUnserved(n.send(v.Port, c.payload), v, direct, c.reason, c.want)
			o := n.send(rec.Port, c.payload)
			n.denied(o, c.reason, c.want)
			got := string(rec.Got())
			if i := strings.Index(c.payload, "\r\n\r\n"); c.reason == netguard.ReasonHTTPMalformed && got != c.payload[:i+4] || c.reason != netguard.ReasonHTTPMalformed && got != "" {
				t.Fatalf("the server received %q", got)
			}
		})
	}
	n.t = t
	// Only the allowed request before the malformed one was served.
	if got := v.Served()[direct:]; !slices.Equal(got, []string{"allowed.test"}) {
		t.Fatalf("served %q; want only allowed.test", got)
	}
}

// TestIntegrationNetworkAllowListUnparsedFirstFlight: bytes on a port
// the guard reads that are neither TLS, HTTP/1.x nor SSH (a binary
// protocol, another text protocol) are refused, typed and audited with
// the tcp:// fix, and none reaches the server.
func TestIntegrationNetworkAllowListUnparsedFirstFlight(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	rec := n.h.ServeRecorder(t)
	n.sb.Network = spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("allowed.test:%d", rec.Port)}}
	fix := fmt.Sprintf(`allow it as "tcp://allowed.test:%d"`, rec.Port)
	for _, payload := range []string{"\x00\x01binary\r\n\r\n", "HELO other.test\r\n", "get key\r\n", "GET /\r\n\r\n"} {
		n.denied(n.send(rec.Port, payload), netguard.ReasonProtocol, fix)
	}
	if got := rec.Got(); len(got) != 0 {
		t.Fatalf("the server received %q", got)
	}
}

// TestIntegrationNetworkAllowListTCPRule: a tcp:// rule's port is not
// read: every byte value, a line no HTTP server would take, pass as sent.
func TestIntegrationNetworkAllowListTCPRule(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	rec := n.h.ServeRecorder(t)
	rule := fmt.Sprintf("tcp://allowed.test:%d", rec.Port)
	n.sb.Network = spec.Network{Enabled: true, Allow: []string{rule}}
	var all bytes.Buffer
	for i := range 256 {
		all.WriteByte(byte(i))
	}
	payload := all.String() + " anything\v at all\r\n"
	o := n.run("python3", "-c", `import socket, sys
c = socket.create_connection(("allowed.test", int(sys.argv[1])), timeout=20)
c.sendall(bytes.fromhex(sys.argv[2])); c.shutdown(socket.SHUT_WR); c.recv(1)`, fmt.Sprint(rec.Port), hex.EncodeToString([]byte(payload)))
	if o.res.FailureType != runner.FailureNone {
		t.Fatalf("%+v, %q", o.res, o.stderr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for string(rec.Got()) != payload && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := rec.Got(); string(got) != payload {
		t.Fatalf("the server received %q; want %q", got, payload)
	}
	found := false
	for _, e := range o.res.Network {
		found = found || e.Proto == "tcp" && e.Decision == netguard.Allow && e.Rule == rule && e.BytesOut == int64(len(payload))
	}
	if !found {
		t.Fatalf("no allowed connection under %s with its bytes among %+v", rule, o.res.Network)
	}
}

// TestIntegrationNetworkAllowListSSH: git over ssh to an allowed name
// works with a plain rule (port 22 as root): the guard reads the client's
// identification line strictly and passes the rest, so the client's
// first packet reaches the server and the server's words reach git.
func TestIntegrationNetworkAllowListSSH(t *testing.T) {
	if _, err := os.Stat("/usr/bin/ssh"); err != nil {
		t.Skip("no ssh client")
	}
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	port := 0
	if n.h.NS != "" {
		port = 22
	}
	s := n.h.ServeSSH(t, port)
	n.sb.Network = spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("allowed.test:%d", s.Port)}}
	o := n.run("env", "GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
		"git", "ls-remote", fmt.Sprintf("ssh://git@allowed.test:%d/repo.git", s.Port))
	if !strings.Contains(o.stderr, s.Text) {
		t.Fatalf("git over ssh: %+v, %q, %q; want the server's %q", o.res, o.stdout, o.stderr, s.Text)
	}
	ident, msg := s.Seen()
	if !strings.HasPrefix(ident, "SSH-2.0-OpenSSH") || msg != 20 {
		t.Fatalf("the server read %q and a packet of type %d; want OpenSSH's line and its KEXINIT (20)", ident, msg)
	}
	for _, e := range o.res.Network {
		// (The server listens on IPv4 only: ssh's try of the name's IPv6
		// address fails upstream, and it tries the next.)
		if e.Decision == netguard.Deny && e.Reason != netguard.ReasonUpstream {
			t.Fatalf("a denial: %+v", e)
		}
	}
}

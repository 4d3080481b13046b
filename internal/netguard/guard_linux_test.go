package netguard

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// sandboxNS is a network namespace with the guard's tun device in it, as a
// sandbox's would be, and the guard over it.
type sandboxNS struct {
	name string
	g    *Guard
	mu   sync.Mutex
	evs  []Event
}

func newSandboxNS(t *testing.T, h *nettest.Host, allow ...string) *sandboxNS {
	t.Helper()
	return newSandboxNSWith(t, h, sandboxOpts{}, allow...)
}

// sandboxOpts: files the namespace's programs see (ip netns exec shows
// /etc/netns/NAME/FILE as /etc/FILE).
type sandboxOpts struct {
	// dns: they ask the loopback resolver dns[0], which the guard
	// answers on a socket in the namespace.
	dns []netip.Addr
	// hosts is their /etc/hosts, which the guard reads too.
	hosts string
}

// sandboxCount numbers the sandboxes, for their names.
var sandboxCount atomic.Int32

func newSandboxNSWith(t *testing.T, h *nettest.Host, o sandboxOpts, allow ...string) *sandboxNS {
	t.Helper()
	s := &sandboxNS{name: h.NS + "-sb"}
	if n := sandboxCount.Add(1); n > 1 {
		// A second sandbox on one test host.
		s.name = fmt.Sprintf("%s-s%d", h.NS, n)
	}
	nettest.Run(t, "ip", "netns", "add", s.name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", s.name).Run() })
	dir := filepath.Join("/etc/netns", s.name)
	files := map[string]string{}
	if len(o.dns) > 0 {
		files["resolv.conf"] = "nameserver " + o.dns[0].String() + "\n"
	}
	if o.hosts != "" {
		files["hosts"] = o.hosts
	}
	if len(files) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.RemoveAll(dir)
			os.Remove("/etc/netns") // only when empty: others may use it
		})
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	hostsFile := ""
	if o.hosts != "" {
		hostsFile = filepath.Join(dir, "hosts")
	}
	dns := o.dns
	ns, err := os.Open(filepath.Join("/run/netns", s.name))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	rules, err := ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	tun, err := tunInThread(ns, dns, LoopbackForwards(rules))
	if err != nil {
		t.Fatal(err)
	}
	s.g, err = Start(tun, Config{Allow: allow, Resolver: h.DNS, HostsFile: hostsFile, OnEvent: func(e Event) {
		s.mu.Lock()
		s.evs = append(s.evs, e)
		s.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.g.Close() })
	return s
}

// run runs a command in the sandbox's namespace.
func (s *sandboxNS) run(args ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", s.name}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *sandboxNS) events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.evs...)
}

// denial returns the one denial with reason, failing when there is none.
func (s *sandboxNS) denial(t *testing.T, reason string) Event {
	t.Helper()
	for _, e := range s.g.Denials() {
		if e.Reason == reason {
			return e
		}
	}
	t.Fatalf("no %s denial; events: %+v", reason, s.events())
	return Event{}
}

func curl(args ...string) []string {
	return append([]string{"curl", "-sS", "--max-time", "20"}, args...)
}

func TestGuardAllowsListedNamesByteExact(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	s := newSandboxNS(t, h, "allowed.test:80", "allowed.test:443")
	out, err := s.run(curl("http://allowed.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("http: %q, %v; want %q", out, err, h.Body)
	}
	out, err = s.run(curl("--cacert", h.CAFile, "https://allowed.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("https: %q, %v; want %q", out, err, h.Body)
	}
	// A connection is recorded when it ends: Close waits for them all.
	s.g.Close()
	if d := s.g.Denials(); len(d) != 0 {
		t.Fatalf("denials: %+v", d)
	}
	var sawSNI, sawHTTP bool
	for _, e := range s.events() {
		sawSNI = sawSNI || e.Proto == "tcp" && e.HostFrom == FromSNI && e.Host == "allowed.test" && e.Decision == Allow && e.BytesIn > 0
		sawHTTP = sawHTTP || e.Proto == "tcp" && e.HostFrom == FromHTTP && e.Rule == "allowed.test:80" && e.BytesOut > 0
	}
	if !sawSNI || !sawHTTP {
		t.Fatalf("allow events missing: %+v", s.events())
	}
}

func TestGuardRefusesAndTypesEachDenial(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	s := newSandboxNS(t, h, "allowed.test:80", "allowed.test:443", "tcp://allowed.test:7")
	ip := h.Addr.String()
	unpinned := h.Addr.Prev().String() // the host side of the veth: no allowed name resolves to it
	cases := []struct {
		name, reason string
		args         []string
		// out must contain this (a 403's body), when set.
		out string
	}{
		{"dns refused", ReasonDNSRefused, curl("http://other.test/"), ""},
		{"host fronting", ReasonHTTPHost, curl("-H", "Host: other.test", "http://allowed.test/"), "other.test:80 is not in the allow list"},
		{"sni fronting", ReasonSNI, curl("--cacert", h.CAFile, "--connect-to", "other.test:443:allowed.test:443", "https://other.test/"), ""},
		{"ip literal", ReasonAddress, curl("http://" + unpinned + "/"), ""},
		{"other port", ReasonPort, curl("http://allowed.test:8080/"), ""},
		{"ping", ReasonICMP, []string{"python3", "-c", fmt.Sprintf(`import socket
s=socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_ICMP); s.settimeout(2)
s.sendto(bytes([8,0,0xf7,0xff,0,0,0,0]),("%s",0))
try:
    s.recv(100)
except TimeoutError:
    raise SystemExit(3)
`, ip)}, ""},
		{"udp", ReasonUDP, []string{"python3", "-c", fmt.Sprintf(`import socket
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.connect(("%s",9999)); s.send(b"x"); s.settimeout(20)
try:
    s.recv(10)
except ConnectionRefusedError:
    raise SystemExit(3)
`, ip)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := s.run(c.args...)
			if c.out == "" && err == nil {
				t.Fatalf("%v succeeded: %s", c.args, out)
			}
			if c.out != "" && !strings.Contains(out, c.out) {
				t.Fatalf("%v: %q, %v; want %q", c.args, out, err, c.out)
			}
			d := s.denial(t, c.reason)
			if d.Decision != Deny || d.Detail == "" {
				t.Fatalf("denial %+v", d)
			}
			t.Logf("%s: %s", c.reason, d.Detail)
		})
	}
	// Nothing refused reached the test host: no DNS question for
	// other.test left the machine, no request for it was served.
	if h.Saw("other.test") {
		t.Error("the test host received a question or a request for other.test")
	}
	if !h.Saw("allowed.test") {
		t.Error("the test host saw nothing for allowed.test: the check above proves nothing")
	}
	// A raw socket to the name and port of a tcp:// rule: bytes come back
	// as sent.
	out, err := s.run("python3", "-c", `import socket
c=socket.create_connection(("allowed.test",7),timeout=20); c.sendall(b"ping\x00\xffpong"); c.shutdown(socket.SHUT_WR)
b=b""
while True:
    x=c.recv(100)
    if not x: break
    b+=x
print(b.hex())`)
	if err != nil || strings.TrimSpace(out) != fmt.Sprintf("%x", "ping\x00\xffpong") {
		t.Fatalf("raw echo: %q, %v", out, err)
	}
}

// A wildcard rule never yields loopback, link-local or metadata addresses;
// a rule naming the exact host honours what the resolver returns.
func TestGuardWildcardNeverYieldsPrivateAddresses(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	h.Extra["lo.wild.test"] = netip.MustParseAddr("127.0.0.1")
	h.Extra["meta.wild.test"] = netip.MustParseAddr("169.254.169.254")
	h.Extra["exact.test"] = netip.MustParseAddr("127.0.0.1")
	h.Extra["pub.wild.test"] = h.Addr
	s := newSandboxNS(t, h, "*.wild.test:80", "exact.test:80")
	for _, name := range []string{"lo.wild.test", "meta.wild.test"} {
		if out, err := s.run("getent", "ahostsv4", name); err == nil {
			t.Fatalf("%s resolved: %s", name, out)
		}
	}
	if d := s.denial(t, ReasonPrivate); !strings.Contains(d.Detail, "never yields") {
		t.Fatalf("denial %+v", d)
	}
	for name, want := range map[string]string{"exact.test": "127.0.0.1", "pub.wild.test": h.Addr.String()} {
		out, err := s.run("getent", "ahostsv4", name)
		if err != nil || !strings.HasPrefix(out, want+" ") {
			t.Fatalf("%s: %q, %v; want %s", name, out, err, want)
		}
	}
	// The apex of a wildcard is not allowed, and the refusal says so.
	if out, err := s.run("getent", "ahostsv4", "wild.test"); err == nil {
		t.Fatalf("wild.test resolved: %s", out)
	}
	found := false
	for _, d := range s.g.Denials() {
		found = found || d.Reason == ReasonDNSRefused && strings.Contains(d.Detail, "matches subdomains only")
	}
	if !found {
		t.Fatalf("no subdomains-only denial: %+v", s.g.Denials())
	}
}

// TestMain lets the test binary act as the tun helper, as cordon does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		HelperMain()
	}
	os.Exit(m.Run())
}

// TestTunForJoinsTheOwningUserNamespace: a network namespace owned by
// another user namespace (a rootless sandbox's) gets its tun device from
// the re-executed helper, which joins that user namespace before the Go
// runtime starts, and the guard answers DNS in it.
func TestTunForJoinsTheOwningUserNamespace(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	if h.NS == "" {
		t.Skip("needs root")
	}
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--net", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	self, _ := os.Readlink("/proc/self/ns/user")
	for {
		// unshare has unshared once its user namespace differs.
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid)); err == nil && ns != self {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "sleep" {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	// And a loopback port of the host, forwarded.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			_, _ = io.WriteString(c, "host loopback\n")
			c.Close()
		}
	}()
	lport := l.Addr().(*net.TCPAddr).Port
	fwd := []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(lport))}
	tun, err := TunFor(pid, LoopbackResolvers("/nonexistent"), fwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(tun.DNS) == 0 || len(tun.Forward) != 1 {
		t.Fatalf("the helper passed %d DNS sockets and %d forwards", len(tun.DNS), len(tun.Forward))
	}
	g, err := Start(tun, Config{Allow: []string{"allowed.test:80", fmt.Sprintf("127.0.0.1:%d", lport)}, Resolver: h.DNS})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	out, err := exec.Command("nsenter", "-t", fmt.Sprint(pid), "-U", "-n", "--preserve-credentials", "getent", "ahostsv4", "allowed.test").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), h.Addr.String()+" ") {
		t.Fatalf("getent in the namespace: %q, %v", out, err)
	}
	out, err = exec.Command("nsenter", "-t", fmt.Sprint(pid), "-U", "-n", "--preserve-credentials", "curl", "-sS", "--max-time", "20", "http://allowed.test/").CombinedOutput()
	if err != nil || string(out) != h.Body {
		t.Fatalf("curl in the namespace: %q, %v", out, err)
	}
	// The helper passed the loopback DNS sockets too.
	out, err = exec.Command("nsenter", "-t", fmt.Sprint(pid), "-U", "-n", "--preserve-credentials", "python3", "-c", `import socket,struct
q=struct.pack(">HHHHHH",7,0x100,1,0,0,0)+b"\x07allowed\x04test\x00"+struct.pack(">HH",1,1)
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(20); s.sendto(q,("127.0.0.1",53)); m=s.recv(512)
print(m[3]&15, socket.inet_ntoa(m[-4:]))`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0 "+h.Addr.String() {
		t.Fatalf("DNS to 127.0.0.1 in the namespace: %q, %v", out, err)
	}
	out, err = exec.Command("nsenter", "-t", fmt.Sprint(pid), "-U", "-n", "--preserve-credentials", "curl", "-sS", "--max-time", "20", fmt.Sprintf("telnet://127.0.0.1:%d", lport)).CombinedOutput()
	if err != nil || string(out) != "host loopback\n" {
		t.Fatalf("the forwarded loopback port: %q, %v", out, err)
	}
}

// TestGuardAnswersLoopbackResolvers: a sandbox whose resolv.conf names a
// loopback resolver (systemd-resolved's 127.0.0.53) has its questions
// answered by the guard on a socket inside its namespace, over UDP and TCP.
func TestGuardAnswersLoopbackResolvers(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	dns := LoopbackResolvers(writeResolvConf(t, "nameserver 127.0.0.53\n"))
	if len(dns) != 3 || dns[2] != netip.MustParseAddr("127.0.0.53") {
		t.Fatalf("LoopbackResolvers = %v", dns)
	}
	// 127.0.0.53 first, so that resolv.conf names it.
	s := newSandboxNSWith(t, h, sandboxOpts{dns: append([]netip.Addr{dns[2]}, dns[:2]...)}, "allowed.test:80")
	out, err := s.run(curl("http://allowed.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("http: %q, %v", out, err)
	}
	// Over TCP (use-vc), and a refused name.
	out, err = s.run("python3", "-c", `import socket,struct
q=struct.pack(">HHHHHH",7,0x100,1,0,0,0)+b"\x05other\x04test\x00"+struct.pack(">HH",1,1)
c=socket.create_connection(("127.0.0.53",53),timeout=20); c.sendall(struct.pack(">H",len(q))+q)
r=c.recv(2); n=struct.unpack(">H",r)[0]; m=c.recv(n); print(m[3]&15)`)
	if err != nil || strings.TrimSpace(out) != "5" {
		t.Fatalf("DNS over TCP to 127.0.0.53: %q, %v; want rcode 5 (REFUSED)", out, err)
	}
	s.denial(t, ReasonDNSRefused)
}

func writeResolvConf(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGuardDoesNotHoldBinaryFirstBytes: a client that sends a byte no
// request line begins with, and waits for the answer, is not held up: on
// a port the guard reads it is refused at once, and nothing reaches the
// server; on a tcp:// port its bytes pass as sent.
func TestGuardDoesNotHoldBinaryFirstBytes(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	rec := h.ServeRecorder(t)
	s := newSandboxNS(t, h, "tcp://allowed.test:7", fmt.Sprintf("allowed.test:%d", rec.Port))
	out, err := s.run("python3", "-c", `import socket
c=socket.create_connection(("allowed.test",7),timeout=20)
c.sendall(b"\x00"); a=c.recv(1); c.sendall(b"ok"); b=b""
while len(b) < 2: b+=c.recv(2-len(b))
print((a+b).hex())`)
	if err != nil || strings.TrimSpace(out) != "006f6b" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	out, err = s.run("python3", "-c", fmt.Sprintf(`import socket
c=socket.create_connection(("allowed.test",%d),timeout=20)
c.sendall(b"\x00"); print(repr(c.recv(1)))`, rec.Port))
	if err != nil || strings.TrimSpace(out) != "b''" {
		t.Fatalf("a binary first byte on a port the guard reads: %q, %v", out, err)
	}
	if d := s.denial(t, ReasonProtocol); !strings.Contains(d.Detail, fmt.Sprintf(`allow it as "tcp://allowed.test:%d"`, rec.Port)) {
		t.Fatalf("denial %+v", d)
	}
	if got := rec.Got(); len(got) != 0 {
		t.Fatalf("the server received %q", got)
	}
}

// TestGuardChecksEveryHTTPRequest: the Host of every request on a
// keep-alive connection is checked, however the client writes it: a
// request line split across writes, empty lines before it, a method the
// guard does not list; and a request whose length is ambiguous (so that
// the server could read a request the guard did not) is refused.
func TestGuardChecksEveryHTTPRequest(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	s := newSandboxNS(t, h, "allowed.test:80")
	send := func(parts ...string) (string, error) {
		var q []string
		for _, p := range parts {
			q = append(q, fmt.Sprintf("%q", p))
		}
		return s.run("python3", "-c", `import socket,sys,time,re
c=socket.create_connection(("allowed.test",80),timeout=20)
for i,p in enumerate([`+strings.Join(q, ",")+`]):
    if i: time.sleep(0.3)
    c.sendall(p.encode())
b=b""
while True:
    try: x=c.recv(65536)
    except ConnectionResetError: break
    if not x: break
    b+=x
sys.stdout.write(" ".join(x.decode() for x in re.findall(rb"HTTP/1\.1 (\d\d\d) ", b)))`)
	}
	other := "Host: other.test\r\nConnection: close\r\n\r\n"
	ok := "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
	for _, c := range []struct {
		name  string
		parts []string
		// want are the status lines the client may read: the guard's
		// 403, or a server's own answer to what it was sent before.
		want   []string
		reason string
	}{
		{"keep-alive", []string{ok, "GET / HTTP/1.1\r\n" + other}, []string{"200 403"}, ReasonHTTPHost},
		{"split request line", []string{"GET / HT", "TP/1.1\r\n" + other}, []string{"403"}, ReasonHTTPHost},
		{"empty lines first", []string{"\r\n\r\nGET / HTTP/1.1\r\n" + other}, []string{"403", "400", "400 403"}, ReasonHTTPHost},
		{"unlisted method", []string{"get / HTTP/1.1\r\n" + other}, []string{"403"}, ReasonHTTPHost},
		{"length and chunks", []string{"POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}, []string{""}, ReasonHTTPFraming},
		// Go's reader ignores Transfer-Encoding in HTTP/1.0 (the body would
		// be empty), a server may not: what the guard read as the next
		// request would be a body.
		{"chunks in HTTP/1.0", []string{"POST / HTTP/1.0\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}, []string{""}, ReasonHTTPFraming},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(s.g.Denials())
			out, err := send(c.parts...)
			if err != nil || !slices.Contains(c.want, out) {
				t.Fatalf("statuses %q, %v; want one of %q", out, err, c.want)
			}
			d := s.g.Denials()
			if len(d) != before+1 || d[before].Reason != c.reason {
				t.Fatalf("denials %+v; want one %s", d[before:], c.reason)
			}
		})
	}
}

// TestGuardPinsHostsFileNames: a name the command resolves through the
// hosts file, without asking DNS, connects as if DNS had answered; a name
// there that the list does not allow does not.
func TestGuardPinsHostsFileNames(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	hosts := fmt.Sprintf("%s hosts.test\n%s unlisted.test\n", h.Addr, h.Addr.Prev())
	s := newSandboxNSWith(t, h, sandboxOpts{hosts: hosts}, "hosts.test:80")
	out, err := s.run(curl("http://hosts.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("hosts.test: %q, %v", out, err)
	}
	for _, e := range s.g.Denials() {
		if e.Proto == "dns" {
			t.Errorf("a hosts-file name was asked of DNS: %+v", e)
		}
	}
	if out, err := s.run(curl("http://unlisted.test/")...); err == nil {
		t.Fatalf("unlisted.test: %q", out)
	}
	s.denial(t, ReasonAddress)
}

// TestGuardRefusesSSHInItsOwnProtocol: ssh to a port the list does not
// allow prints cordon's reason (git over ssh shows it too).
func TestGuardRefusesSSHInItsOwnProtocol(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	s := newSandboxNS(t, h, "allowed.test:443")
	out, err := s.run("ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20", "git@allowed.test")
	if err == nil || !strings.Contains(out, "cordon: network_denied: allowed.test:22 is not allowed: allowed.test is allowed on port 443 only") {
		t.Fatalf("ssh: %q, %v", out, err)
	}
	s.denial(t, ReasonPort)
}

// TestGuardIPv6: IPv6 goes through the tun device as IPv4 does: an
// allowed name's AAAA answer is pinned and reachable, an address no
// allowed name resolved to is refused.
func TestGuardIPv6(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	s := newSandboxNS(t, h, "allowed.test:80")
	out, err := s.run(curl("-6", "http://allowed.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("curl -6: %q, %v", out, err)
	}
	if out, err := s.run(curl("-g", "http://["+h.Addr6.Prev().String()+"]/")...); err == nil {
		t.Fatalf("an unpinned IPv6 address: %q", out)
	}
	if d := s.denial(t, ReasonAddress); d.Addr != h.Addr6.Prev().String() {
		t.Fatalf("denial %+v", d)
	}
}

// TestGuardForwardsAllowedLoopbackPorts: a rule naming a loopback address
// and port (a database on the host's localhost) is served by a listener
// in the sandbox's namespace that forwards to the host's; other loopback
// ports stay the sandbox's own.
func TestGuardForwardsAllowedLoopbackPorts(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	s := newSandboxNS(t, h, fmt.Sprintf("127.0.0.1:%d", port))
	echo := func(port int) (string, error) {
		return s.run("python3", "-c", fmt.Sprintf(`import socket
c=socket.create_connection(("127.0.0.1",%d),timeout=20); c.sendall(b"db?"); c.shutdown(socket.SHUT_WR)
b=b""
while True:
    x=c.recv(100)
    if not x: break
    b+=x
print(b.decode())`, port))
	}
	out, err := echo(port)
	if err != nil || strings.TrimSpace(out) != "db?" {
		t.Fatalf("the allowed loopback port: %q, %v", out, err)
	}
	if out, err := echo(port + 1); err == nil {
		t.Fatalf("another loopback port reached the host: %q", out)
	}
	s.g.Close()
	found := false
	for _, e := range s.events() {
		found = found || e.Proto == "tcp" && e.Addr == "127.0.0.1" && e.Port == uint16(port) && e.Decision == Allow && e.BytesIn == 3
	}
	if !found {
		t.Fatalf("no forwarded connection among %+v", s.events())
	}
}

// TestNamespaceMadeAheadCarriesTheGuard: a network namespace NewNamespace
// makes (root, for a sandbox to join) is not cordon's own, gets its
// device and sockets from TunIn, and a program that joins it afterwards
// reaches only what the guard allows. When the guard closes, the device
// is left to the namespace (persistent, no longer read), so nothing the
// namespace sends goes anywhere, and the host has no such device.
func TestNamespaceMadeAheadCarriesTheGuard(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	if h.NS == "" {
		t.Skip("needs root")
	}
	ns, err := NewNamespace()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var mine, made unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &mine); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(ns.Fd()), &made); err != nil {
		t.Fatal(err)
	}
	if mine.Ino == made.Ino {
		t.Fatal("NewNamespace returned cordon's own network namespace")
	}
	dev, err := TunIn(ns, LoopbackResolvers("/nonexistent"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !dev.EndsWithNamespace {
		t.Error("TunIn's device is not left to its namespace")
	}
	var events []Event
	var mu sync.Mutex
	g, err := Start(dev, Config{Allow: []string{"allowed.test:80"}, Resolver: h.DNS, OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A program joins the namespace as a sandbox's init would (nsenter
	// by the path cordon hands libcontainer).
	inNS := func(args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"--net=" + fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.Fd())}, args...)...)
	}
	out, err := inNS("curl", "-sS", "--max-time", "20", "http://allowed.test/").CombinedOutput()
	if err != nil || string(out) != h.Body {
		g.Close()
		t.Fatalf("curl in the namespace: %q, %v", out, err)
	}
	out, err = inNS("curl", "-sS", "--max-time", "20", "http://other.test/").CombinedOutput()
	if err == nil {
		g.Close()
		t.Fatalf("curl of a name not in the list: %q", out)
	}
	g.Close()
	mu.Lock()
	var refused bool
	for _, e := range events {
		refused = refused || e.Decision == Deny && e.Reason == ReasonDNSRefused && strings.Contains(e.Detail, "other.test")
	}
	mu.Unlock()
	if !refused {
		t.Errorf("no refusal of other.test among %+v", events)
	}
	if h.Saw("other.test") {
		t.Error("the test host was asked for other.test")
	}
	out, err = inNS("ip", "-d", "link", "show", TunName).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "persist on") {
		t.Errorf("after Close the namespace's %s: %q, %v; want it left there, persistent", TunName, out, err)
	}
	out, err = inNS("curl", "-sS", "--max-time", "3", fmt.Sprintf("http://%s/", h.Addr)).CombinedOutput()
	if err == nil {
		t.Errorf("after Close a connection from the namespace got %q", out)
	}
	if err := exec.Command("ip", "link", "show", TunName).Run(); err == nil {
		t.Errorf("the host has a device %s", TunName)
	}
}

package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// netSandbox is a sandbox with an allow list, run against a test host.
type netSandbox struct {
	t  *testing.T
	h  *nettest.Host
	sb *spec.Sandbox
	r  runner.Runner
	ca string
}

func newNetSandbox(t *testing.T) *netSandbox {
	t.Helper()
	sb := newSandbox(t)
	h := nettest.NewHost(t, "allowed.test", "other.test")
	sb.Network = spec.Network{Enabled: true, Allow: h.Allow("allowed.test")}
	r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t), Resolver: h.DNS})
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox has a private /tmp: the CA goes in its workspace.
	ca, err := os.ReadFile(h.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(sb.Root, "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	return &netSandbox{t: t, h: h, sb: sb, r: r, ca: caFile}
}

func (n *netSandbox) run(args ...string) runOut {
	n.t.Helper()
	var so, se bytes.Buffer
	res, err := n.r.Run(context.Background(), runner.Request{Sandbox: n.sb, Args: args, Stdout: &so, Stderr: &se})
	if err != nil {
		n.t.Fatalf("Run: %v", err)
	}
	return runOut{res: res, stdout: so.String(), stderr: se.String()}
}

// denied asserts a run typed network_denied whose detail says want, with
// the denial among the run's network events.
func (n *netSandbox) denied(o runOut, reason, want string) {
	n.t.Helper()
	if o.res.FailureType != runner.FailureNetworkDenied || !strings.Contains(o.res.FailureDetail, want) {
		n.t.Fatalf("result %+v (stderr %q); want network_denied saying %q", o.res, o.stderr, want)
	}
	for _, e := range o.res.Network {
		if e.Decision == netguard.Deny && e.Reason == reason {
			return
		}
	}
	n.t.Fatalf("no %s event in %+v", reason, o.res.Network)
}

func curlArgs(args ...string) []string {
	return append([]string{"curl", "-fsS", "--max-time", "20"}, args...)
}

// TestIntegrationNetworkAllowList: real clients in a sandbox with an allow
// list reach the allowed names byte for byte; every other destination is
// refused by cordon's own stack, and the run says why.
func TestIntegrationNetworkAllowList(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		n.refusedWithoutTun()
		return
	}
	h := n.h
	list := "[" + strings.Join(h.Allow("allowed.test"), ", ") + "]"
	o := n.run(curlArgs(h.URL("http", "allowed.test"))...)
	if o.res.FailureType != runner.FailureNone || o.stdout != n.h.Body {
		t.Fatalf("http: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}
	o = n.run(curlArgs("--cacert", n.ca, h.URL("https", "allowed.test"))...)
	if o.res.FailureType != runner.FailureNone || o.stdout != n.h.Body {
		t.Fatalf("https: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}
	var sni bool
	for _, e := range o.res.Network {
		sni = sni || e.Proto == "tcp" && e.HostFrom == netguard.FromSNI && e.Decision == netguard.Allow && e.BytesIn > 0
	}
	if !sni {
		t.Fatalf("no allowed TLS connection among %+v", o.res.Network)
	}
	// A raw socket, no proxy variables: bytes come back as sent.
	o = n.run("python3", "-c", fmt.Sprintf(`import socket
c=socket.create_connection(("allowed.test",%d),timeout=20); c.sendall(b"raw\x00\xff"); c.shutdown(socket.SHUT_WR)
b=b""
while True:
    x=c.recv(100)
    if not x: break
    b+=x
print(b.hex())`, h.EchoPort))
	if o.res.FailureType != runner.FailureNone || strings.TrimSpace(o.stdout) != "726177"+"00ff" {
		t.Fatalf("raw socket: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}

	other := 8080
	for other == h.HTTPPort || other == h.HTTPSPort || other == h.EchoPort {
		other++
	}
	n.denied(n.run(curlArgs(h.URL("http", "other.test"))...), netguard.ReasonDNSRefused, "other.test is not in the allow list "+list)
	n.denied(n.run(curlArgs("-H", "Host: other.test", h.URL("http", "allowed.test"))...), netguard.ReasonHTTPHost, fmt.Sprintf("other.test:%d is not in the allow list", h.HTTPPort))
	n.denied(n.run(curlArgs("--cacert", n.ca, "--connect-to", fmt.Sprintf("other.test:%d:allowed.test:%d", h.HTTPSPort, h.HTTPSPort), h.URL("https", "other.test"))...),
		netguard.ReasonSNI, fmt.Sprintf("other.test:%d is not in the allow list", h.HTTPSPort))
	n.denied(n.run(curlArgs(fmt.Sprintf("http://%s:%d/", n.unlisted(), h.HTTPPort))...), netguard.ReasonAddress, "no allowed host resolved to")
	n.denied(n.run(curlArgs(fmt.Sprintf("http://allowed.test:%d/", other))...), netguard.ReasonPort, fmt.Sprintf("allowed.test is allowed on port %d, %d, %d only", h.HTTPPort, h.HTTPSPort, h.EchoPort))
	// And none of it reached the test host: no question for other.test
	// left the machine, no request for it was served.
	if h.Saw("other.test") {
		t.Error("the test host received a DNS question or a request for other.test")
	}
}

// TestIntegrationNetworkAllowListIgnoresHostProxy: with an allow list,
// proxy variables the host has (and env.pass names) are not passed, so
// curl, which honours them, is not pointed at a host proxy it could not
// reach: it connects to the allowed name itself, through the guard, and
// gets its answer byte for byte. A proxy the config sets is passed.
func TestIntegrationNetworkAllowListIgnoresHostProxy(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	// TEST-NET-1: nothing answers there, and the list does not allow it.
	for _, v := range []string{"http_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		t.Setenv(v, "http://192.0.2.1:3128")
	}
	t.Setenv("NO_PROXY", "nothing.example")
	n.sb.Env.Pass = append(n.sb.Env.Pass, "http_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
	o := n.run(curlArgs(n.h.URL("http", "allowed.test"))...)
	if o.res.FailureType != runner.FailureNone || o.stdout != n.h.Body {
		t.Fatalf("curl with the host's proxy variables passed: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}
	for _, e := range o.res.Network {
		if e.Addr == "192.0.2.1" {
			t.Errorf("the command connected to the host's proxy: %+v", e)
		}
	}
	n.sb.Env.Set = map[string]string{"HTTPS_PROXY": "http://proxy.example:3128"}
	o = n.run("sh", "-c", "env | grep -i _proxy= | sort")
	if o.res.FailureType != runner.FailureNone || o.stdout != "HTTPS_PROXY=http://proxy.example:3128\n" {
		t.Fatalf("the sandbox's proxy variables: %+v, %q; want only the one the config sets", o.res, o.stdout)
	}
}

// unlisted is an address on this machine that no allowed name resolves to.
func (n *netSandbox) unlisted() string {
	if n.h.NS != "" {
		return n.h.Addr.Prev().String() // the host's end of the veth
	}
	return n.h.Addr.Next().String()
}

// tunOpens reports whether this user can open /dev/net/tun (a rootless
// user cannot where the device is 0600, as on some hosts).
func tunOpens() bool {
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// refusedWithoutTun: without a tun device an allow list is refused, with
// the reason, and with require_os_sandbox: false the network is off, not
// open.
func (n *netSandbox) refusedWithoutTun() {
	t := n.t
	o := n.run(curlArgs(n.h.URL("http", "allowed.test"))...)
	if o.res.FailureType != runner.FailureSetupError || !strings.Contains(o.res.FailureDetail, "/dev/net/tun cannot be opened") || o.stdout != "" {
		t.Fatalf("without a tun device: %+v, %q", o.res, o.stdout)
	}
	n.sb.RequireOSSandbox = false
	o = n.run(curlArgs(n.h.URL("http", "allowed.test"))...)
	if o.res.FailureType == runner.FailureNone || o.stdout != "" || len(o.res.Unenforced) != 1 || !strings.Contains(o.res.Unenforced[0], "network stays off") {
		t.Fatalf("degraded without a tun device: %+v, %q", o.res, o.stdout)
	}
	t.Logf("this user cannot open /dev/net/tun: the allow list was refused (%s)", o.res.Unenforced[0])
}

// TestIntegrationNetworkAllowListSession: a warm session keeps one guard;
// each exec gets its own decisions and its own typing.
func TestIntegrationNetworkAllowListSession(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	s, err := n.r.(runner.SessionStarter).StartSession(context.Background(), runner.SessionRequest{Sandbox: n.sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	o := execIn(t, s, runner.ExecRequest{Args: curlArgs(n.h.URL("http", "allowed.test"))})
	if o.res.FailureType != runner.FailureNone || o.stdout != n.h.Body {
		t.Fatalf("allowed: %+v, %q", o.res, o.stdout)
	}
	first := o.res.Network
	o = execIn(t, s, runner.ExecRequest{Args: curlArgs(n.h.URL("http", "other.test"))})
	if o.res.FailureType != runner.FailureNetworkDenied || !strings.Contains(o.res.FailureDetail, "other.test is not in the allow list") {
		t.Fatalf("denied: %+v", o.res)
	}
	// The first exec's connection is recorded when both its sides have
	// closed, which may be after curl's exec (or even the next one) ended:
	// it is reported once, by the first exec to end after it was
	// recorded. Later execs are polled until one has reported it (at most
	// 1000, as a bound on a guard that never records it).
	all := append(first, o.res.Network...)
	conns := func() int {
		n := 0
		for _, e := range all {
			if e.Proto == "tcp" && e.Host == "allowed.test" && e.Decision == netguard.Allow {
				n++
			}
		}
		return n
	}
	for i := 0; conns() == 0 && i < 1000; i++ {
		time.Sleep(10 * time.Millisecond)
		o2 := execIn(t, s, runner.ExecRequest{Args: []string{"true"}})
		if o2.res.FailureType != runner.FailureNone {
			t.Fatalf("a later exec: %+v", o2.res)
		}
		all = append(all, o2.res.Network...)
	}
	if c := conns(); c != 1 {
		t.Errorf("the allowed connection was reported %d times", c)
	}
}

// TestIntegrationNetworkAllowListSessionTail: a connection made after a
// session's last exec ended (by what a detached exec left running) is in
// no exec's result: the closed session returns it, once, for the audit
// log.
func TestIntegrationNetworkAllowListSessionTail(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	s, err := n.r.(runner.SessionStarter).StartSession(context.Background(), runner.SessionRequest{Sandbox: n.sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// The background curl waits for a file the test makes once the exec
	// has returned, then writes its output to another.
	script := fmt.Sprintf("(while [ ! -e go ]; do sleep 0.05; done; curl -fsS --max-time 20 -o got %s; touch done) >/dev/null 2>&1 &", n.h.URL("http", "allowed.test"))
	o := execIn(t, s, runner.ExecRequest{Args: []string{"sh", "-c", script}, Detach: true})
	if o.res.FailureType != runner.FailureNone {
		t.Fatalf("detached exec: %+v", o.res)
	}
	if err := os.WriteFile(filepath.Join(n.sb.Root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if _, err := os.Stat(filepath.Join(n.sb.Root, "done")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := os.ReadFile(filepath.Join(n.sb.Root, "got")); err != nil || string(got) != n.h.Body {
		t.Fatalf("the background curl got %q, %v", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tail := s.(runner.NetworkTail).UnreportedNetwork()
	conns := 0
	for _, e := range append(o.res.Network, tail...) {
		if e.Proto == "tcp" && e.Host == "allowed.test" && e.Decision == netguard.Allow && e.BytesIn > 0 {
			conns++
		}
	}
	if conns != 1 {
		t.Errorf("the connection after the last exec was reported %d times: exec %+v, tail %+v", conns, o.res.Network, tail)
	}
	if again := s.(runner.NetworkTail).UnreportedNetwork(); len(again) != 0 {
		t.Errorf("the tail was returned twice: %+v", again)
	}
}

// TestIntegrationNetworkAllowListGit: git clones over HTTP from an allowed
// host, byte for byte, and a clone from another is refused and typed.
func TestIntegrationNetworkAllowListGit(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	content := strings.Repeat("cordon allow list\x00\xff\n", 4096)
	n.h.ServeGit(t, map[string]string{"data.bin": content})
	dst := filepath.Join(n.sb.Root, "clone")
	o := n.run("git", "clone", "-q", n.h.URL("http", "allowed.test")+"git/repo.git", dst)
	if o.res.FailureType != runner.FailureNone {
		t.Fatalf("clone: %+v, %q", o.res, o.stderr)
	}
	got, err := os.ReadFile(filepath.Join(dst, "data.bin"))
	if err != nil || string(got) != content {
		t.Fatalf("cloned data.bin: %d bytes, %v; want %d bytes as served", len(got), err, len(content))
	}
	o = n.run("git", "clone", "-q", n.h.URL("http", "other.test")+"git/repo.git", filepath.Join(n.sb.Root, "other"))
	n.denied(o, netguard.ReasonDNSRefused, "other.test is not in the allow list")
}

// TestIntegrationNetworkAllowListNode: Node's built-in fetch, which
// ignores proxy variables, is held to the list like every program.
func TestIntegrationNetworkAllowListNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on this machine")
	}
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	fetch := func(url string) []string {
		return []string{"node", "-e", "fetch(" + strconv.Quote(url) + ").then(r => r.text()).then(t => process.stdout.write(t), e => { console.error(String(e.cause || e)); process.exit(1) })"}
	}
	o := n.run(fetch(n.h.URL("http", "allowed.test"))...)
	if o.res.FailureType != runner.FailureNone || o.stdout != n.h.Body {
		t.Fatalf("fetch: %+v, %q, %q", o.res, o.stdout, o.stderr)
	}
	n.denied(n.run(fetch(n.h.URL("http", "other.test"))...), netguard.ReasonDNSRefused, "other.test is not in the allow list")
}

// TestIntegrationNetworkAllowListWorker: a worker derived with a narrower
// allow list is held to its own list, not its parent's; a worker that
// asks for a host its parent does not allow is refused at derivation.
func TestIntegrationNetworkAllowListWorker(t *testing.T) {
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	h := n.h
	n.sb.Network.Allow = append(h.Allow("allowed.test"), fmt.Sprintf("other.test:%d", h.HTTPPort))
	narrow := &spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("allowed.test:%d", h.HTTPPort)}}
	child, err := spec.Derive(n.sb, &spec.Worker{Name: "fetcher", Sandbox: &spec.WorkerRequest{Network: narrow}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	parent := n.sb
	if o := n.run(curlArgs(h.URL("http", "other.test"))...); o.res.FailureType != runner.FailureNone || o.stdout != h.Body {
		t.Fatalf("the parent reaches other.test: %+v, %q", o.res, o.stdout)
	}
	n.sb = child
	if o := n.run(curlArgs(h.URL("http", "allowed.test"))...); o.res.FailureType != runner.FailureNone || o.stdout != h.Body {
		t.Fatalf("the worker reaches allowed.test: %+v, %q", o.res, o.stdout)
	}
	n.denied(n.run(curlArgs(h.URL("http", "other.test"))...), netguard.ReasonDNSRefused, "other.test is not in the allow list ["+narrow.Allow[0]+"]")
	wide := &spec.Network{Enabled: true, Allow: []string{"elsewhere.test:80"}}
	if _, err := spec.Derive(parent, &spec.Worker{Name: "greedy", Sandbox: &spec.WorkerRequest{Network: wide}}, 3); err == nil {
		t.Fatal("a worker was given a host its parent does not allow")
	}
}

// TestIntegrationNetworkAllowListLoopback: "localhost:PORT" in the list
// reaches the host's own localhost on that port (a dev server, a
// database), and no other port of it.
func TestIntegrationNetworkAllowListLoopback(t *testing.T) {
	sb := newSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "the host's localhost\n")
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	sb.Network = spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("localhost:%d", port)}}
	n := &netSandbox{t: t, sb: sb}
	if n.r, err = runnerlinux.New(runner.Options{StateDir: stateDir(t)}); err != nil {
		t.Fatal(err)
	}
	o := n.run(curlArgs(fmt.Sprintf("http://localhost:%d/", port))...)
	if o.res.FailureType != runner.FailureNone || o.stdout != "the host's localhost\n" {
		t.Fatalf("localhost:%d: %+v, %q, %q", port, o.res, o.stdout, o.stderr)
	}
	if o := n.run(curlArgs(fmt.Sprintf("http://localhost:%d/", port+1))...); o.res.FailureType == runner.FailureNone {
		t.Fatalf("another port of localhost: %+v, %q", o.res, o.stdout)
	}
}

package netguard

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// The proxy that enforces allow lists on macOS, tested here with real
// clients (curl, git, Python) against the test hosts: the clients run in
// the test's own namespace and reach the hosts only through the proxy,
// which resolves names with the host's DNS server.

type testProxy struct {
	*Proxy
	mu  sync.Mutex
	evs []Event
}

func newTestProxy(t *testing.T, h *nettest.Host, allow ...string) *testProxy {
	t.Helper()
	tp := &testProxy{}
	p, err := NewProxy(Config{Allow: allow, Resolver: h.DNS, OnEvent: func(e Event) {
		tp.mu.Lock()
		tp.evs = append(tp.evs, e)
		tp.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	tp.Proxy = p
	t.Cleanup(func() { p.Close() })
	return tp
}

func (tp *testProxy) events() []Event {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]Event(nil), tp.evs...)
}

// denial returns the one denial with reason, failing when there is none.
func (tp *testProxy) denial(t *testing.T, reason string) Event {
	t.Helper()
	for _, e := range tp.Denials() {
		if e.Reason == reason {
			return e
		}
	}
	t.Fatalf("no %s denial; events: %+v", reason, tp.events())
	return Event{}
}

// run runs a client with the proxy's variables, as a sandboxed process
// on macOS gets them, and nothing else of the test's environment.
func (tp *testProxy) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(tp.Env(), "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// auth is the Proxy-Authorization header line of the proxy's credentials.
func (tp *testProxy) auth() string {
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(ProxyUser+":"+tp.secret)) + "\r\n"
}

// exchange sends each part on one connection to the proxy and returns the
// status codes of the answers it reads until the proxy closes. Parts are
// sent a moment apart, as a client waits for an answer: a refusal ends the
// connection at once, the answers still in flight with it.
func (tp *testProxy) exchange(t *testing.T, parts ...string) []string {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(tp.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, p := range parts {
		if i > 0 {
			// The answer to what came before is read first.
			time.Sleep(300 * time.Millisecond)
		}
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	// Every exchange ends with a request the proxy answers with
	// Connection: close (a client's half-close would cancel a request).
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, _ := io.ReadAll(c)
	var codes []string
	for _, m := range regexp.MustCompile(`HTTP/1\.1 (\d\d\d) `).FindAllSubmatch(b, -1) {
		codes = append(codes, string(m[1]))
	}
	return codes
}

func TestProxyAllowsListedHostsByteExact(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	out, err := tp.run(t, "curl", "-sS", "--max-time", "20", "--cacert", h.CAFile, h.URL("https", "allowed.test"))
	if err != nil || out != h.Body {
		t.Fatalf("https: %q, %v; want %q", out, err, h.Body)
	}
	out, err = tp.run(t, "curl", "-sS", "--max-time", "20", h.URL("http", "allowed.test"))
	if err != nil || out != h.Body {
		t.Fatalf("http: %q, %v; want %q", out, err, h.Body)
	}
	// Python's urllib reads the same variables.
	out, err = tp.run(t, "python3", "-c", `import ssl,sys,urllib.request
ctx=ssl.create_default_context(cafile=sys.argv[1])
sys.stdout.write(urllib.request.urlopen(sys.argv[2],context=ctx,timeout=20).read().decode())`, h.CAFile, h.URL("https", "allowed.test"))
	if err != nil || out != h.Body {
		t.Fatalf("python urllib: %q, %v; want %q", out, err, h.Body)
	}
	tp.Close()
	if d := tp.Denials(); len(d) != 0 {
		t.Fatalf("denials: %+v", d)
	}
	var sni, plain int
	for _, e := range tp.events() {
		if e.Proto == "tcp" && e.HostFrom == FromSNI && e.Host == "allowed.test" && e.Decision == Allow && e.BytesIn > 0 && e.Addr == h.Addr.String() {
			sni++
		}
		if e.Proto == "tcp" && e.HostFrom == FromHTTP && e.Host == "allowed.test" && e.Decision == Allow && e.Rule == fmt.Sprintf("allowed.test:%d", h.HTTPPort) {
			plain++
		}
	}
	if sni != 2 || plain != 1 {
		t.Fatalf("allow events: %d TLS, %d plain HTTP; want 2 and 1: %+v", sni, plain, tp.events())
	}
	// Closed: nothing listens at the port any more.
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(tp.Port())); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
}

func TestProxyRefusesAndTypesEachDenial(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	h.Extra["loop.wild.test"] = netip.MustParseAddr("127.0.0.1")
	allow := []string{fmt.Sprintf("allowed.test:%d", h.HTTPPort), fmt.Sprintf("allowed.test:%d", h.HTTPSPort), "*.wild.test"}
	tp := newTestProxy(t, h, allow...)
	list := "[" + strings.Join(allow, ", ") + "]"
	cases := []struct {
		name, url, reason, detail string
	}{
		{"unlisted name over TLS", h.URL("https", "other.test"), ReasonNotAllowed, fmt.Sprintf("other.test:%d is not in the allow list %s", h.HTTPSPort, list)},
		{"unlisted name over HTTP", h.URL("http", "other.test"), ReasonNotAllowed, fmt.Sprintf("other.test:%d is not in the allow list %s", h.HTTPPort, list)},
		{"another port", fmt.Sprintf("http://allowed.test:%d/", h.EchoPort), ReasonPort, fmt.Sprintf("allowed.test:%d is not allowed: allowed.test is allowed on port %d, %d only", h.EchoPort, h.HTTPPort, h.HTTPSPort)},
		{"address literal", h.URL("https", h.Addr.String()), ReasonAddress, ""},
		{"wildcard to loopback", "http://loop.wild.test/", ReasonPrivate, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(tp.Denials())
			out, err := tp.run(t, "curl", "-sS", "--max-time", "20", "--cacert", h.CAFile, "-o", "/dev/null", "-w", "%{http_code} %{http_connect}", c.url)
			if strings.HasPrefix(c.url, "https") {
				// curl reads the refusal of its CONNECT and fails.
				if err == nil || !strings.Contains(out, "403") {
					t.Fatalf("curl: %q, %v; want a refused CONNECT (403)", out, err)
				}
			} else if err != nil || !strings.HasPrefix(out, "403") {
				t.Fatalf("curl: %q, %v; want 403", out, err)
			}
			d := tp.Denials()
			if len(d) != before+1 || d[before].Reason != c.reason {
				t.Fatalf("denials %+v; want one %s", d[before:], c.reason)
			}
			if c.detail != "" && d[before].Detail != c.detail {
				t.Fatalf("detail %q; want %q", d[before].Detail, c.detail)
			}
		})
	}
	// The 403's body says why, in the words of the run's failure_detail.
	out, _ := tp.run(t, "curl", "-sS", "--max-time", "20", h.URL("http", "other.test"))
	want := fmt.Sprintf("cordon: network_denied: other.test:%d is not in the allow list %s\n", h.HTTPPort, list)
	if out != want {
		t.Fatalf("403 body %q; want %q", out, want)
	}
	// Nothing refused reached the host, not even as a DNS question.
	if h.Saw("other.test") {
		t.Errorf("the host saw other.test")
	}
	if slices.ContainsFunc(h.Served(), func(s string) bool { return !strings.HasPrefix(s, "allowed.test") }) {
		t.Errorf("served: %q", h.Served())
	}
}

// TestProxyRefusesSNIFronting: a CONNECT to an allowed name whose TLS
// ClientHello names another host (domain fronting) is cut before a byte
// reaches the server.
func TestProxyRefusesSNIFronting(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	hp := fmt.Sprintf("%d", h.HTTPSPort)
	// curl asks the proxy for allowed.test and says other.test in TLS.
	out, err := tp.run(t, "curl", "-sS", "--max-time", "20", "--cacert", h.CAFile,
		"--connect-to", "other.test:"+hp+":allowed.test:"+hp, h.URL("https", "other.test"))
	if err == nil {
		t.Fatalf("fronted request went through: %q", out)
	}
	d := tp.denial(t, ReasonSNI)
	if d.Host != "other.test" || d.HostFrom != FromSNI || !strings.Contains(d.Detail, "other.test:"+hp+" is not in the allow list") {
		t.Fatalf("denial %+v", d)
	}
	if h.Saw("other.test") {
		t.Fatal("the host saw other.test")
	}
}

// TestProxyChecksEveryHTTPRequest: on one keep-alive connection to the
// proxy, each request is decided by its own host; the Host header the
// server sees is always the one decided; and plain HTTP in a CONNECT
// tunnel has its Host checked as the Guard checks it.
func TestProxyChecksEveryHTTPRequest(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	auth := tp.auth()
	allowed := fmt.Sprintf("allowed.test:%d", h.HTTPPort)
	other := fmt.Sprintf("other.test:%d", h.HTTPPort)
	t.Run("keep-alive host switch", func(t *testing.T) {
		before := len(tp.Denials())
		got := tp.exchange(t,
			"GET http://"+allowed+"/ HTTP/1.1\r\nHost: "+allowed+"\r\n"+auth+"\r\n",
			"GET http://"+other+"/ HTTP/1.1\r\nHost: "+other+"\r\n"+auth+"\r\n")
		if !slices.Equal(got, []string{"200", "403"}) {
			t.Fatalf("statuses %q; want 200 403", got)
		}
		if d := tp.Denials(); len(d) != before+1 || d[before].Reason != ReasonNotAllowed {
			t.Fatalf("denials %+v", d[before:])
		}
	})
	t.Run("host header unlike the URL", func(t *testing.T) {
		got := tp.exchange(t, "GET http://"+allowed+"/ HTTP/1.1\r\nHost: "+other+"\r\n"+auth+"Connection: close\r\n\r\n")
		if !slices.Equal(got, []string{"200"}) {
			t.Fatalf("statuses %q; want 200", got)
		}
	})
	t.Run("host switch in a tunnel", func(t *testing.T) {
		before := len(tp.Denials())
		got := tp.exchange(t, "CONNECT "+allowed+" HTTP/1.1\r\nHost: "+allowed+"\r\n"+auth+"\r\n",
			"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
		if !slices.Equal(got, []string{"200", "200", "403"}) {
			t.Fatalf("statuses %q; want 200 (tunnel) 200 403", got)
		}
		if d := tp.Denials(); len(d) != before+1 || d[before].Reason != ReasonHTTPHost {
			t.Fatalf("denials %+v", d[before:])
		}
	})
	if h.Saw("other.test") {
		t.Fatalf("the host saw other.test: %q", h.Served())
	}
}

// TestProxyRefusesRequestsWithoutItsCredentials: the proxy is not an open
// relay for other local processes: without the run's credentials (or with
// others) nothing is resolved or dialled.
func TestProxyRefusesRequestsWithoutItsCredentials(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	port := strconv.Itoa(tp.Port())
	for _, proxy := range []string{"http://127.0.0.1:" + port, "http://cordon:wrong@127.0.0.1:" + port} {
		for _, url := range []string{h.URL("http", "allowed.test"), h.URL("https", "allowed.test")} {
			cmd := exec.Command("curl", "-sS", "--max-time", "20", "--cacert", h.CAFile, "-o", "/dev/null", "-w", "%{http_code} %{http_connect}", "-x", proxy, url)
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "407") {
				t.Fatalf("%s via %s: %q; want 407", url, proxy, out)
			}
		}
	}
	d := tp.denial(t, ReasonProxyAuth)
	if !strings.Contains(d.Detail, "lacks the run's credentials") {
		t.Fatalf("denial %+v", d)
	}
	if h.Saw("allowed.test") || len(h.Served()) != 0 {
		t.Fatalf("the host was reached: %q", h.Served())
	}
}

// TestProxyGitOverHTTP: git clones through the proxy, byte for byte.
func TestProxyGitOverHTTP(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	files := map[string]string{"README": "through the proxy\n", "data.bin": strings.Repeat("x\x00y", 50000)}
	h.ServeGit(t, files)
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	dst := filepath.Join(t.TempDir(), "clone")
	out, err := tp.run(t, "git", "clone", "-q", fmt.Sprintf("http://allowed.test:%d/git/repo.git", h.HTTPPort), dst)
	if err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Fatalf("%s: %d bytes, %v; want %d", name, len(got), err, len(want))
		}
	}
}

// TestProxyEnv: the variables point every kind of client at the proxy,
// with its credentials, and leave none a way around it.
func TestProxyEnv(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	env := map[string]string{}
	for _, kv := range tp.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	u := tp.URL()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		if env[k] != u {
			t.Errorf("%s=%q; want %q", k, env[k], u)
		}
	}
	if v, ok := env["NO_PROXY"]; !ok || v != "" {
		t.Errorf("NO_PROXY=%q (set %v); want it set and empty", v, ok)
	}
	if env["NODE_USE_ENV_PROXY"] != "1" || !strings.Contains(env["JAVA_TOOL_OPTIONS"], "-Dhttps.proxyPort="+strconv.Itoa(tp.Port())) {
		t.Errorf("env %q", tp.Env())
	}
	if !strings.HasPrefix(u, "http://cordon:") || !strings.HasSuffix(u, "@127.0.0.1:"+strconv.Itoa(tp.Port())) || len(tp.secret) < 32 {
		t.Errorf("URL %q", u)
	}
}

// TestProxyBoundsItsConnections: connections past maxClients, idle ones
// counted, are closed at once and recorded; once they are gone, requests
// are served again.
func TestProxyBoundsItsConnections(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	tp := newTestProxy(t, h, h.Allow("allowed.test")...)
	addr := "127.0.0.1:" + strconv.Itoa(tp.Port())
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range maxClients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server counts a connection when it accepts it: wait for all.
	for i := 0; tp.clients.Load() < maxClients; i++ {
		if i > 2000 {
			t.Fatalf("%d connections counted", tp.clients.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("connection past the bound: read %d, %v; want it closed", n, err)
	}
	tp.denial(t, ReasonTooMany)
	for _, c := range held {
		c.Close()
	}
	held = nil
	for i := 0; tp.clients.Load() > 0; i++ {
		if i > 2000 {
			t.Fatalf("%d connections still counted", tp.clients.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	out, err := tp.run(t, "curl", "-sS", "--max-time", "20", h.URL("http", "allowed.test"))
	if err != nil || out != h.Body {
		t.Fatalf("after the flood: %q, %v", out, err)
	}
}

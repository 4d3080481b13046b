// Package nettest makes test hosts for the network guard's tests: a
// network namespace of the test's own, joined to the host by a veth pair,
// with real servers inside (HTTP, HTTPS, a TCP echo and DNS). Nothing in it
// reaches an address outside this machine, and the test's cleanup removes
// the namespace and the link.
package nettest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// Host is a test host in a network namespace of its own.
type Host struct {
	// NS is the namespace's name (ip netns).
	NS string
	// Addr is the host's address, reachable from the test's namespace.
	Addr netip.Addr
	// Addr6 is its IPv6 address (as root only), where the HTTP server
	// answers too; its names resolve to it for AAAA.
	Addr6 netip.Addr
	// Names resolve to Addr in the host's DNS server.
	Names []string
	// CAFile is a PEM file with the CA of the HTTPS server's certificate.
	CAFile string
	// Body is what the HTTP and HTTPS servers answer for every path.
	Body string
	// The servers' ports: 80, 443 and 7 as root; ephemeral ones as
	// another user.
	HTTPPort, HTTPSPort, EchoPort int
	// inNS: the servers run inside NS (as root).
	inNS bool
	git  atomic.Pointer[cgi.Handler]
	// asked are the names the DNS server was asked (under mu).
	asked []string
	// served are the Host of every request the HTTP servers answered.
	mu     sync.Mutex
	served []string
	// Extra are more names the DNS server answers, with other addresses.
	Extra map[string]netip.Addr
	// DNS is a resolver that asks the host's DNS server, as the guard's
	// upstream resolver.
	DNS *net.Resolver
}

// AddrEnv names the variable through which a root parent (the rootless
// test script) hands an unprivileged test an address of a link it made
// for it (hack/test-rootless.sh); the test's servers listen there, in the
// test's own namespace, on ephemeral ports.
const AddrEnv = "CORDON_NETTEST_ADDR"

// Run runs a command with ip(8), failing the test on error.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NewHost makes a test host answering for names. As root it makes a
// namespace of its own; as another user it needs the address in AddrEnv,
// and skips without one.
func NewHost(t testing.TB, names ...string) *Host {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts a test host (a network namespace, a veth pair, servers); go test ./... (make unit) runs it")
	}
	n := int(time.Now().UnixNano()/1000+int64(os.Getpid())) % 250
	tag := fmt.Sprintf("%d%02x", os.Getpid()%100000, n)
	h := &Host{Names: names, Body: "hello from the test host " + tag + "\n", Extra: map[string]netip.Addr{}}
	if os.Geteuid() != 0 {
		a, err := netip.ParseAddr(os.Getenv(AddrEnv))
		if err != nil {
			t.Skipf("test hosts need root (ip netns, veth), or an address in %s (hack/test-rootless.sh)", AddrEnv)
		}
		h.Addr = a
		h.serve(t)
		return h
	}
	h.NS, h.inNS = "cordon-nt-"+tag, true
	h.HTTPPort, h.HTTPSPort, h.EchoPort = 80, 443, 7
	hostIf, peerIf := "cnt"+tag+"h", "cnt"+tag+"p"
	if len(hostIf) > 15 {
		hostIf, peerIf = hostIf[:14]+"h", peerIf[:14]+"p"
	}
	Run(t, "ip", "netns", "add", h.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.NS).Run() })
	Run(t, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", peerIf, "netns", h.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostIf).Run() })
	sub := claimSubnet(t, n, hostIf)
	h.Addr = netip.MustParseAddr(sub + ".2")
	// The IPv6 subnet follows the IPv4 one, which is unique.
	sub6 := fmt.Sprintf("fd13:213:%s::", strings.TrimPrefix(sub, "10.213."))
	h.Addr6 = netip.MustParseAddr(sub6 + "2")
	Run(t, "ip", "addr", "add", sub6+"1/64", "dev", hostIf, "nodad")
	Run(t, "ip", "-n", h.NS, "addr", "add", sub6+"2/64", "dev", peerIf, "nodad")
	Run(t, "ip", "link", "set", hostIf, "up")
	Run(t, "ip", "-n", h.NS, "addr", "add", sub+".2/24", "dev", peerIf)
	Run(t, "ip", "-n", h.NS, "link", "set", peerIf, "up")
	Run(t, "ip", "-n", h.NS, "link", "set", "lo", "up")
	Run(t, "ip", "-n", h.NS, "route", "add", "default", "via", sub+".1")
	Run(t, "ip", "-n", h.NS, "-6", "route", "add", "default", "via", sub6+"1")
	h.serve(t)
	return h
}

// listen opens listeners inside the host's namespace.
func (h *Host) listen(t testing.TB, network string, port int) any {
	t.Helper()
	return h.listenOn(t, network, h.Addr, port)
}

// listenOn opens a listener on addr inside the host's namespace.
func (h *Host) listenOn(t testing.TB, network string, ip netip.Addr, port int) any {
	t.Helper()
	type res struct {
		v   any
		err error
	}
	ch := make(chan res, 1)
	go func() {
		if h.inNS {
			// The thread stays in the namespace and dies with the
			// goroutine.
			runtime.LockOSThread()
			ns, err := os.Open(filepath.Join("/run/netns", h.NS))
			if err == nil {
				err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
				ns.Close()
			}
			if err != nil {
				ch <- res{err: err}
				return
			}
		}
		addr := net.JoinHostPort(ip.String(), fmt.Sprint(port))
		if network == "udp" {
			c, err := net.ListenPacket("udp", addr)
			ch <- res{c, err}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- res{l, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen in %s: %v", h.NS, r.err)
	}
	return r.v
}

func (h *Host) serve(t testing.TB) {
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test-Host", r.Host)
		h.mu.Lock()
		h.served = append(h.served, r.Host)
		h.mu.Unlock()
		if g := h.git.Load(); g != nil && strings.HasPrefix(r.URL.Path, "/git/") {
			g.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/zeros" {
			// /zeros?n=BYTES: that many zero bytes, for throughput.
			n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			buf := make([]byte, 256<<10)
			for n > 0 {
				k, err := w.Write(buf[:min(n, int64(len(buf)))])
				if err != nil {
					return
				}
				n -= int64(k)
			}
			return
		}
		_, _ = io.WriteString(w, h.Body)
	})
	hl := h.listen(t, "tcp", h.HTTPPort).(net.Listener)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(hl) }()
	if h.Addr6.IsValid() {
		hl6 := h.listenOn(t, "tcp", h.Addr6, h.HTTPPort).(net.Listener)
		srv6 := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
		go func() { _ = srv6.Serve(hl6) }()
		t.Cleanup(func() { srv6.Close() })
	}
	cert, ca := h.certificate(t)
	tl := h.listen(t, "tcp", h.HTTPSPort).(net.Listener)
	tsrv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = tsrv.ServeTLS(tl, "", "") }()
	el := h.listen(t, "tcp", h.EchoPort).(net.Listener)
	go echo(el)
	h.HTTPPort, h.HTTPSPort, h.EchoPort = port(hl.Addr()), port(tl.Addr()), port(el.Addr())
	dl := h.listen(t, "udp", 0).(net.PacketConn)
	go h.dns(dl)
	t.Cleanup(func() {
		srv.Close()
		tsrv.Close()
		el.Close()
		dl.Close()
	})
	h.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(h.CAFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	dnsAddr := dl.LocalAddr().String()
	h.DNS = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dnsAddr)
	}}
}

func port(a net.Addr) int { return int(netip.MustParseAddrPort(a.String()).Port()) }

func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}

// dns answers A queries for the host's names with its address, and
// NXDOMAIN for every other name.
func (h *Host) dns(c net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		hd, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		m := dnsmessage.Message{Header: dnsmessage.Header{ID: hd.ID, Response: true, Authoritative: true}, Questions: []dnsmessage.Question{q}}
		name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
		h.mu.Lock()
		h.asked = append(h.asked, name)
		h.mu.Unlock()
		addr, known := h.Extra[name]
		for _, x := range h.Names {
			if x == name {
				addr, known = h.Addr, true
			}
		}
		switch {
		case !known:
			m.RCode = dnsmessage.RCodeNameError
		case q.Type == dnsmessage.TypeAAAA && h.Addr6.IsValid() && addr == h.Addr:
			m.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET, TTL: 5},
				Body: &dnsmessage.AAAAResource{AAAA: h.Addr6.As16()}}}
		case q.Type == dnsmessage.TypeA:
			m.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
				Body: &dnsmessage.AResource{A: addr.As4()}}}
		}
		out, err := m.Pack()
		if err == nil {
			_, _ = c.WriteTo(out, from)
		}
	}
}

// certificate makes a CA and a server certificate for the host's names.
func (h *Host) certificate(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cordon test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: h.Names[0]}, DNSNames: h.Names,
		IPAddresses: []net.IP{h.Addr.AsSlice()}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// Served returns the Host of every request the HTTP and HTTPS servers
// answered so far, in order.
func (h *Host) Served() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.served...)
}

// URL is the address of the HTTP (scheme "http") or HTTPS server as name.
func (h *Host) URL(scheme, name string) string {
	p := h.HTTPPort
	if scheme == "https" {
		p = h.HTTPSPort
	}
	return fmt.Sprintf("%s://%s:%d/", scheme, name, p)
}

// Allow is the allow list of name on the servers' three ports: HTTP and
// HTTPS, which the guard reads, and the echo port as tcp:// (a protocol
// it does not read, whose bytes pass as sent).
func (h *Host) Allow(name string) []string {
	return []string{fmt.Sprintf("%s:%d", name, h.HTTPPort), fmt.Sprintf("%s:%d", name, h.HTTPSPort), fmt.Sprintf("tcp://%s:%d", name, h.EchoPort)}
}

// Listen opens a TCP listener on the host's address (in its namespace, as
// root), on port (0: an ephemeral one); the test's cleanup closes it.
func (h *Host) Listen(t testing.TB, port int) net.Listener {
	t.Helper()
	l := h.listen(t, "tcp", port).(net.Listener)
	t.Cleanup(func() { l.Close() })
	return l
}

// Command is a command that runs where the host's servers run: in its
// namespace as root (ip netns exec), in the test's own otherwise.
func (h *Host) Command(args ...string) *exec.Cmd {
	if h.inNS {
		return exec.Command("ip", append([]string{"netns", "exec", h.NS}, args...)...)
	}
	return exec.Command(args[0], args[1:]...)
}

// ServeGit makes a bare repository repo.git with one commit of files and
// serves it over git's smart HTTP protocol (git http-backend) at
// /git/repo.git. It returns the repository's path.
func (h *Host) ServeGit(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	bare := filepath.Join(root, "repo.git")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(work, "init", "-q")
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "test")
	git(root, "clone", "-q", "--bare", work, bare)
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	h.git.Store(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root: "/git",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	return bare
}

// claimSubnet gives the host's end of a test link a /24 of 10.213/16 that
// no other link has: test binaries run in parallel, and two links with one
// subnet would send a test's connections to another's host. The choice
// and the address are made under a lock on /run, which every test binary
// of this package takes (nothing is created for it). 10.213.251-255 are
// left to hack/test-rootless.sh.
func claimSubnet(t testing.TB, start int, hostIf string) string {
	t.Helper()
	lock, err := os.Open("/run")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	used := Run(t, "ip", "-4", "-o", "addr", "show")
	for i := 0; i < 250; i++ {
		sub := fmt.Sprintf("10.213.%d", (start+i)%250+1)
		if strings.Contains(used, " "+sub+".") {
			continue
		}
		Run(t, "ip", "addr", "add", sub+".1/24", "dev", hostIf)
		return sub
	}
	t.Fatal("no free test subnet in 10.213.1-250.0/24")
	return ""
}

// Saw reports whether the host's servers received anything naming name:
// a DNS question for it, or an HTTP request with it as Host (with or
// without a port).
func (h *Host) Saw(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.asked, name) {
		return true
	}
	for _, s := range h.served {
		if s == name || strings.HasPrefix(s, name+":") {
			return true
		}
	}
	return false
}

package netguard

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ProxyUser is the user name of a Proxy's credentials.
const ProxyUser = "cordon"

// Proxy is an HTTP proxy on the loopback interface that enforces an allow
// list for programs that honour the proxy variables: it is how macOS, where
// Seatbelt cannot filter connections by host, enforces one (the sandbox's
// profile allows it to connect to the proxy's port only). It decides with
// the same rules, checks and audit records as the Guard: CONNECT tunnels
// (TLS and any other TCP) are decided by the name they ask for, which
// cordon resolves and dials by address (no re-resolution), and then read
// as the Guard reads a connection (the TLS server name, the Host of every
// plain HTTP request); plain HTTP requests in absolute form are decided one
// by one, and the server sees the Host that was checked. Every request must
// carry the run's credentials (see URL), so no other local process can use
// the proxy as an open relay.
type Proxy struct {
	*policy
	listeners []net.Listener
	srv       *http.Server
	auth      string
	port      int
	secret    string
	transport *http.Transport
	rp        *httputil.ReverseProxy

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	// open are the tunnels' connections, closed by Close.
	open   map[net.Conn]struct{}
	active atomic.Int32
	// clients counts the connections to the proxy, idle ones included.
	clients atomic.Int32
	wg      sync.WaitGroup
}

// Where the name of a proxy Event came from, besides FromSNI and FromHTTP.
const (
	// FromConnect: the host of a CONNECT request.
	FromConnect = "http_connect"
)

// Reasons of a proxy's denials, besides the Guard's.
const (
	// ReasonProxyAuth: a request to the proxy without the run's
	// credentials.
	ReasonProxyAuth = "proxy_auth_required"
	// ReasonProxyRequest: a request the proxy does not serve (not
	// CONNECT, not absolute http://).
	ReasonProxyRequest = "proxy_request_refused"
)

// maxProxied bounds the requests and tunnels a proxy serves at once, as
// maxActive bounds a Guard's: each holds buffers in cordon's own process.
const maxProxied = 256

// maxClients bounds the connections to a proxy, idle keep-alive ones and
// those that have not sent a request yet included: each holds a goroutine
// and buffers in cordon's process.
const maxClients = 1024

// NewProxy starts a proxy on 127.0.0.1 (and ::1, on the same port, where
// this host has IPv6 loopback) on an ephemeral port, with fresh
// credentials. cfg.HostsFile is not used: names are resolved by
// cfg.Resolver (nil: the host's, /etc/hosts included).
func NewProxy(cfg Config) (*Proxy, error) {
	pol, err := newPolicy(Config{Allow: cfg.Allow, Resolver: cfg.Resolver, Dial: cfg.Dial, OnEvent: cfg.OnEvent})
	if err != nil {
		return nil, err
	}
	var key [16]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("netguard: proxy credentials: %w", err)
	}
	ls, port, err := listenLoopback()
	if err != nil {
		return nil, err
	}
	p := &Proxy{policy: pol, listeners: ls, port: port, secret: hex.EncodeToString(key[:]), open: map[net.Conn]struct{}{}}
	p.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(ProxyUser+":"+p.secret))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d, _ := ctx.Value(decidedKey{}).(*decided)
			if d == nil {
				return nil, errors.New("netguard: a request the proxy did not decide")
			}
			return p.dialDecided(ctx, d)
		},
		// The client's own encoding and connection handling, unchanged.
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// The URL as the client gave it (absolute); the Host sent is
			// the URL's, which is what was decided.
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.URL.Host
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			d, _ := r.Context().Value(decidedKey{}).(*decided)
			detail := fmt.Sprintf("%s: %v", r.URL.Host, err)
			if d != nil {
				d.ev.Decision, d.ev.Reason, d.ev.Detail = Deny, ReasonUpstream, detail
				p.record(d.ev)
				d.recorded = true
			}
			refuse(w, http.StatusBadGateway, detail)
		},
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHead,
		ConnState:         p.connState,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	for _, l := range ls {
		go func() { _ = p.srv.Serve(l) }()
	}
	return p, nil
}

// connState closes a connection past maxClients at once, and records it.
func (p *Proxy) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		if p.clients.Add(1) > maxClients {
			// Recorded before the client can see the close.
			p.record(Event{Proto: "tcp", Decision: Deny, Reason: ReasonTooMany,
				Detail: fmt.Sprintf("a connection to cordon's proxy was closed: %d are open already (the most one sandbox may have at once)", maxClients)})
			c.Close()
		}
	case http.StateHijacked, http.StateClosed:
		p.clients.Add(-1)
	}
}

// listenLoopback listens on 127.0.0.1 on an ephemeral port and on ::1 on
// the same port, so that no other program can answer the sandbox at the
// port its profile allows on either loopback address. A host without IPv6
// loopback gets the IPv4 listener alone.
func listenLoopback() ([]net.Listener, int, error) {
	var last error
	for range 20 {
		l4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, 0, fmt.Errorf("netguard: proxy listener: %w", err)
		}
		port := l4.Addr().(*net.TCPAddr).Port
		l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
		switch {
		case err == nil:
			return []net.Listener{l4, l6}, port, nil
		case errors.Is(err, syscall.EADDRINUSE):
			// Another program has this port on ::1: try another.
			l4.Close()
			last = err
			continue
		}
		// No IPv6 loopback here: nothing can listen there either.
		return []net.Listener{l4}, port, nil
	}
	return nil, 0, fmt.Errorf("netguard: proxy listener: no port free on both 127.0.0.1 and ::1: %w", last)
}

// Port is the proxy's port on 127.0.0.1 (and ::1).
func (p *Proxy) Port() int { return p.port }

// URL is the proxy's address with its credentials,
// http://cordon:SECRET@127.0.0.1:PORT, for the proxy variables.
func (p *Proxy) URL() string {
	return "http://" + ProxyUser + ":" + p.secret + "@127.0.0.1:" + strconv.Itoa(p.port)
}

// Env are the variables that point a sandboxed process's clients at the
// proxy, with its credentials: the proxy variables in both cases (curl and
// git read the lower-case ones, others the upper-case), NO_PROXY empty (a
// client must not go around the proxy, where it would only fail),
// NODE_USE_ENV_PROXY for Node's fetch and http, and JAVA_TOOL_OPTIONS with
// the JVM's proxy properties (the JVM takes no credentials from them:
// a JVM program without an Authenticator of its own gets 407).
func (p *Proxy) Env() []string {
	u := p.URL()
	port := strconv.Itoa(p.port)
	env := []string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, k+"="+u)
	}
	return append(env, "NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1",
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort="+port+" -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort="+port)
}

// Close stops the proxy: its listeners, its connections and its tunnels.
// Every decision has been handed to OnEvent when it returns.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	p.wg.Wait()
	p.transport.CloseIdleConnections()
	p.Flush()
	return err
}

// enter counts a request being served; false once the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// track keeps a tunnel's connection for Close; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

// decided is a destination the proxy admitted: the name (or address) and
// port asked for, the addresses to dial and the event being built.
type decided struct {
	name     string
	port     uint16
	addrs    []netip.Addr
	byAddr   Rule
	ev       Event
	recorded bool
}

type decidedKey struct{}

// refuse answers a refused request with a body that says why.
func refuse(w http.ResponseWriter, code int, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, "cordon: network_denied: "+why+"\n")
}

// ServeHTTP serves one request to the proxy.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		refuse(w, http.StatusServiceUnavailable, "the sandbox's run has ended")
		return
	}
	defer p.wg.Done()
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Proxy-Authorization")), []byte(p.auth)) != 1 {
		why := "the request to cordon's proxy lacks the run's credentials (the user and password of the proxy URL in HTTPS_PROXY, HTTP_PROXY and ALL_PROXY); a client that does not send them cannot connect"
		p.record(Event{Proto: "tcp", Host: r.Host, HostFrom: FromConnect, Decision: Deny, Reason: ReasonProxyAuth, Detail: why})
		w.Header().Set("Proxy-Authenticate", `Basic realm="cordon"`)
		refuse(w, http.StatusProxyAuthRequired, why)
		return
	}
	if p.active.Add(1) > maxProxied {
		p.active.Add(-1)
		why := fmt.Sprintf("%s: refused, %d connections are open already (the most one sandbox may have at once)", r.Host, maxProxied)
		p.record(Event{Proto: "tcp", Host: r.Host, Decision: Deny, Reason: ReasonTooMany, Detail: why})
		refuse(w, http.StatusServiceUnavailable, why)
		return
	}
	defer p.active.Add(-1)
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		why := fmt.Sprintf("%s %s: cordon's proxy serves CONNECT and http:// requests in absolute form only; allowed: %s", r.Method, r.URL, list(p.rules))
		p.record(Event{Proto: "tcp", Host: r.Host, HostFrom: FromHTTP, Decision: Deny, Reason: ReasonProxyRequest, Detail: why})
		refuse(w, http.StatusBadRequest, why)
		return
	}
	d, code, why := p.decide(r.URL.Host, 80, FromHTTP)
	if d == nil {
		refuse(w, code, why)
		return
	}
	r.Header.Del("Proxy-Connection")
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), decidedKey{}, d)))
	if !d.recorded {
		d.ev.Decision = Allow
		p.record(d.ev)
	}
}

// decide decides a destination, host[:port] as a request names it
// (defPort when it has none): an address must be in the allow list, a
// name must be, and it is resolved by cordon with the Guard's rule for
// wildcards. It returns the decision, or the status and the sentence of a
// refusal, which it records.
func (p *Proxy) decide(hostport string, defPort uint16, from string) (*decided, int, string) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		host, portText = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), strconv.Itoa(int(defPort))
	}
	ev := Event{Time: time.Now().UTC(), Proto: "tcp", Host: host, HostFrom: from}
	deny := func(code int, reason, why string) (*decided, int, string) {
		ev.Decision, ev.Reason, ev.Detail = Deny, reason, why
		p.record(ev)
		return nil, code, why
	}
	n, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || n == 0 {
		return deny(http.StatusBadRequest, ReasonNotAllowed, fmt.Sprintf("%q: not a host and port; allowed: %s", hostport, list(p.rules)))
	}
	port := uint16(n)
	ev.Port = port
	if a, err := netip.ParseAddr(host); err == nil {
		ev.Host, ev.HostFrom, ev.Addr = "", FromAddr, a.Unmap().String()
		r, ok := addrRule(p.rules, a, port)
		if !ok || a.Zone() != "" {
			return deny(http.StatusForbidden, ReasonAddress, fmt.Sprintf("%s is not in the allow list %s: it is an address that is not listed; connect by name",
				hostPort(a.Unmap().String(), port), list(p.rules)))
		}
		ev.Rule = r.Text
		return &decided{name: a.Unmap().String(), port: port, addrs: []netip.Addr{a.Unmap()}, byAddr: r, ev: ev}, 0, ""
	}
	name := normalizeName(host)
	if name == "" {
		return deny(http.StatusForbidden, ReasonNotAllowed, fmt.Sprintf("%q is not an allowed host name; allowed: %s", host, list(p.rules)))
	}
	ev.Host = name
	r, why := nameDecision(p.rules, name, port)
	if r.Text == "" {
		reason := ReasonNotAllowed
		for _, x := range p.rules {
			if x.matchName(name) {
				reason = ReasonPort
			}
		}
		return deny(http.StatusForbidden, reason, why)
	}
	ev.Rule = r.Text
	var addrs []netip.Addr
	var lookupErr error
	for _, v6 := range []bool{false, true} {
		as, err := p.lookup(name, v6)
		if err != nil {
			lookupErr = err
		}
		addrs = append(addrs, as...)
	}
	var kept []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if r.Wildcard && p.neverByWildcard(a) {
			continue
		}
		kept = append(kept, a)
	}
	switch {
	case len(kept) == 0 && len(addrs) > 0:
		return deny(http.StatusForbidden, ReasonPrivate, fmt.Sprintf("%s resolved only to loopback, link-local, metadata or this machine's own addresses, which the wildcard rule %q never yields; add %q to allow it", name, r.Text, name))
	case len(kept) == 0 && lookupErr != nil:
		return deny(http.StatusBadGateway, ReasonUpstream, fmt.Sprintf("resolving %s: %v", name, lookupErr))
	case len(kept) == 0:
		return deny(http.StatusBadGateway, ReasonUpstream, fmt.Sprintf("resolving %s: no address", name))
	}
	for _, a := range kept {
		p.addPin(a, name, r)
	}
	ev.Addr = kept[0].String()
	return &decided{name: name, port: port, addrs: kept, ev: ev}, 0, ""
}

// dialDecided dials the first of a decision's addresses that answers:
// the addresses cordon resolved, never the name again.
func (p *Proxy) dialDecided(ctx context.Context, d *decided) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	var errs []error
	for _, a := range d.addrs {
		c, err := p.dial(ctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(int(d.port))))
		if err == nil {
			d.ev.Addr = a.String()
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// connect serves a CONNECT: decided by its host and port, dialled, then
// relayed as the Guard relays a connection (TLS server name and plain
// HTTP Host checked).
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	d, code, why := p.decide(r.Host, 0, FromConnect)
	if d == nil {
		refuse(w, code, why)
		return
	}
	up, err := p.dialDecided(r.Context(), d)
	if err != nil {
		detail := fmt.Sprintf("%s: %v", hostPort(d.name, d.port), err)
		d.ev.Decision, d.ev.Reason, d.ev.Detail = Deny, ReasonUpstream, detail
		p.record(d.ev)
		refuse(w, http.StatusBadGateway, detail)
		return
	}
	if !p.track(up) {
		up.Close()
		refuse(w, http.StatusServiceUnavailable, "the sandbox's run has ended")
		return
	}
	defer p.untrack(up)
	hj, ok := w.(http.Hijacker)
	if !ok {
		refuse(w, http.StatusInternalServerError, "cannot tunnel")
		return
	}
	raw, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	down := &bufConn{Conn: raw, r: brw.Reader}
	if !p.track(raw) {
		raw.Close()
		return
	}
	defer p.untrack(raw)
	if _, err := io.WriteString(raw, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	dst, _ := netip.ParseAddr(d.ev.Addr)
	c := &tcpConn{p: p.policy, dst: dst, port: d.port, addrRule: d.byAddr, ev: d.ev}
	if d.byAddr.Text == "" {
		c.names = []string{d.name}
	}
	c.relay(down, up)
}

// bufConn is a hijacked connection whose first bytes may be buffered
// already.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the connection when it can.
func (b *bufConn) CloseWrite() error {
	if cw, ok := b.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return b.Conn.Close()
}

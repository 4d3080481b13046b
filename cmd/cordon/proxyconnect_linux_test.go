package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// `cordon proxy-connect`, the ssh ProxyCommand of macOS runs with an allow
// list, run as built against the real proxy (netguard.Proxy) and a test
// host: bytes pass both ways exactly to an allowed host, and a refused one
// gets the proxy's reason on stderr, a non-zero exit and no connection.

type proxyLog struct {
	*netguard.Proxy
	evs chan netguard.Event
}

func startTestProxy(t *testing.T, h *nettest.Host, allow ...string) *proxyLog {
	t.Helper()
	pl := &proxyLog{evs: make(chan netguard.Event, 64)}
	p, err := netguard.NewProxy(netguard.Config{Allow: allow, Resolver: h.DNS, OnEvent: func(e netguard.Event) { pl.evs <- e }})
	if err != nil {
		t.Fatal(err)
	}
	pl.Proxy = p
	t.Cleanup(func() { p.Close() })
	return pl
}

// closeEvents closes the proxy and returns every decision it made.
func (pl *proxyLog) closeEvents() []netguard.Event {
	pl.Close()
	close(pl.evs)
	var out []netguard.Event
	for e := range pl.evs {
		out = append(out, e)
	}
	return out
}

func runProxyConnect(t *testing.T, env []string, stdin []byte, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cordonBin(t), append([]string{"proxy-connect"}, args...)...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProxyConnectRelaysAllowedHostByteExact(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	// The echo port carries a protocol the proxy does not read: tcp://.
	pl := startTestProxy(t, h, fmt.Sprintf("tcp://allowed.test:%d", h.EchoPort))
	// Every byte value, more than one buffer's worth.
	payload := bytes.Repeat([]byte{0, 1, 2, 0xff, '\r', '\n', 'S', 'S', 'H'}, 40000)
	r := runProxyConnect(t, pl.Env(), payload, "allowed.test", fmt.Sprint(h.EchoPort))
	if r.code != 0 || r.stdout != string(payload) {
		t.Fatalf("exit %d, %d bytes back (want %d, equal: %v); stderr: %s", r.code, len(r.stdout), len(payload), r.stdout == string(payload), r.stderr)
	}
	var ok bool
	for _, e := range pl.closeEvents() {
		if e.Decision == netguard.Allow && e.Host == "allowed.test" && e.HostFrom == netguard.FromConnect &&
			e.BytesIn == int64(len(payload)) && e.BytesOut == int64(len(payload)) {
			ok = true
		}
	}
	if !ok {
		t.Fatal("no allow record of the tunnel with its bytes")
	}
}

func TestProxyConnectRefusalShowsTheReason(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	allow := fmt.Sprintf("allowed.test:%d", h.EchoPort)
	for _, c := range []struct{ name, host, port, want string }{
		{"host not listed", "other.test", fmt.Sprint(h.EchoPort), fmt.Sprintf("other.test:%d is not in the allow list [%s]", h.EchoPort, allow)},
		{"port not listed", "allowed.test", fmt.Sprint(h.HTTPPort), fmt.Sprintf("allowed.test:%d is not allowed: allowed.test is allowed on port %d only", h.HTTPPort, h.EchoPort)},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := startTestProxy(t, h, allow)
			r := runProxyConnect(t, pl.Env(), []byte("SSH-2.0-test\r\n"), c.host, c.port)
			if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "403") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a failure with %q", r.code, r.stdout, r.stderr, c.want)
			}
			// The proxy's own record, not the client's words: denied,
			// nothing dialled, no bytes.
			evs := pl.closeEvents()
			if len(evs) != 1 || evs[0].Decision != netguard.Deny || evs[0].BytesIn != 0 || evs[0].BytesOut != 0 {
				t.Fatalf("events: %+v; want one denial and no bytes", evs)
			}
			if c.host == "other.test" && h.Saw("other.test") {
				t.Fatal("the refused name was resolved at the test host")
			}
		})
	}
	t.Run("ssh shows the reason", func(t *testing.T) {
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			t.Skip("no ssh client")
		}
		pl := startTestProxy(t, h, allow)
		home := t.TempDir()
		cmd := exec.Command(ssh, "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "ProxyCommand="+cordonBin(t)+" proxy-connect %h %p", "-p", fmt.Sprint(h.EchoPort), "git@other.test", "true")
		cmd.Env = append(pl.Env(), "HOME="+home, "PATH="+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		want := fmt.Sprintf("other.test:%d is not in the allow list [%s]", h.EchoPort, allow)
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("ssh: %v\n%s\nwant the reason %q", err, out, want)
		}
		if evs := pl.closeEvents(); len(evs) != 1 || evs[0].Decision != netguard.Deny {
			t.Fatalf("events: %+v; want one denial", evs)
		}
	})
}

// TestProxyConnectGitOverSSH: git with the GIT_SSH_COMMAND that macOS
// runs get (darwin.sshProxyEnv's form) shows the proxy's reason.
func TestProxyConnectGitOverSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	h := nettest.NewHost(t, "allowed.test", "other.test")
	allow := fmt.Sprintf("allowed.test:%d", h.EchoPort)
	pl := startTestProxy(t, h, allow)
	cmd := exec.Command("git", "ls-remote", fmt.Sprintf("ssh://git@other.test:%d/repo.git", h.EchoPort))
	cmd.Env = append(pl.Env(), "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"),
		"GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o ProxyCommand='"+cordonBin(t)+" proxy-connect %h %p'")
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("other.test:%d is not in the allow list [%s]", h.EchoPort, allow)
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("git: %v\n%s\nwant the reason %q", err, out, want)
	}
	if evs := pl.closeEvents(); len(evs) != 1 || evs[0].Decision != netguard.Deny {
		t.Fatalf("events: %+v; want one denial", evs)
	}
}

// TestProxyConnectGitOverSSHReachesAnAllowedHost: git over ssh through
// the proxy reaches an allowed name's ssh server with a plain rule (no
// tcp://): the proxy reads the client's identification line strictly and
// passes the rest, both ways.
func TestProxyConnectGitOverSSHReachesAnAllowedHost(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	h := nettest.NewHost(t, "allowed.test")
	s := h.ServeSSH(t, 0)
	pl := startTestProxy(t, h, fmt.Sprintf("allowed.test:%d", s.Port))
	cmd := exec.Command("git", "ls-remote", fmt.Sprintf("ssh://git@allowed.test:%d/repo.git", s.Port))
	cmd.Env = append(pl.Env(), "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"),
		"GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ProxyCommand='"+cordonBin(t)+" proxy-connect %h %p'")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), s.Text) {
		t.Fatalf("git: %s\nwant the server's %q", out, s.Text)
	}
	if ident, msg := s.Seen(); !strings.HasPrefix(ident, "SSH-2.0-OpenSSH") || msg != 20 {
		t.Fatalf("the server read %q and a packet of type %d; want OpenSSH's line and its KEXINIT (20)", ident, msg)
	}
	for _, e := range pl.closeEvents() {
		if e.Decision == netguard.Deny {
			t.Fatalf("a denial: %+v", e)
		}
	}
}

func TestProxyConnectNeedsItsProxyVariable(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"none", nil, "none of HTTPS_PROXY, https_proxy, ALL_PROXY, all_proxy is set"},
		{"garbled", []string{"HTTPS_PROXY=127.0.0.1:1"}, "HTTPS_PROXY is not an http://USER:PASSWORD@HOST:PORT URL"},
		{"no credentials", []string{"ALL_PROXY=http://127.0.0.1:1"}, "ALL_PROXY is not an http://USER:PASSWORD@HOST:PORT URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runProxyConnect(t, append([]string{"PATH=/usr/bin:/bin"}, c.env...), nil, "example.test", "22")
			if r.code != exitConfig || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", r.code, r.stdout, r.stderr, exitConfig, c.want)
			}
		})
	}
}

package linux_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// A server that does not read a request's body (Python's, for a GET)
// reads it as the next request on the connection, whose Host the guard
// never checked, since it forwarded those bytes as a body. The guard makes
// a request with a body the last it forwards on a connection: it asks the
// server to close after it ("Connection: close" in place of the client's
// Connection fields), and forwards nothing the client sends after its
// body. Each test below first shows, around the guard, that the server
// serves other.test for the bytes, then that through the guard it does
// not, as root and as an unprivileged user (hack/test-rootless.sh runs
// every test named NetworkAllowList).

// smuggledOther is the request for other.test a body carries.
const smuggledOther = "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n"

// bodyLength is the Content-Length field of a body that is smuggledOther.
var bodyLength = fmt.Sprintf("Content-Length: %d\r\n", len(smuggledOther))

// bodyNotRead sends payload, a request for allowed.test whose body holds
// a request for other.test, to the vhost server v: around the guard the
// server serves other.test; through it, only allowed.test, which the
// client reads, with no denial (the request was allowed; what the server
// would have read from its body never reaches a request parser).
func bodyNotRead(t *testing.T, n *netSandbox, v *nettest.Vhosts, payload string) {
	t.Helper()
	if got := sendDirect(t, n.h, v.Port, payload); !strings.Contains(got, "the content of other.test") {
		t.Fatalf("the server reads the body, so the test proves nothing: %q", got)
	}
	direct := len(v.Served())
	o := n.send(v.Port, payload)
	if !strings.Contains(o.stdout, "the content of allowed.test") || strings.Contains(o.stdout, "other.test") {
		t.Fatalf("the client read %q (%+v, %q); want allowed.test's content only", o.stdout, o.res, o.stderr)
	}
	if got := v.Served()[direct:]; !slices.Equal(got, []string{"allowed.test"}) {
		t.Fatalf("the server served %q; want allowed.test only", got)
	}
	noDenial(t, o)
}

// noDenial fails on a denial among a run's events but for the dial of the
// name's IPv6 address, on which the test server does not listen.
func noDenial(t *testing.T, o runOut) {
	t.Helper()
	for _, e := range o.res.Network {
		if e.Decision == netguard.Deny && e.Reason != netguard.ReasonUpstream {
			t.Fatalf("a denial: %+v", e)
		}
	}
}

// newBodySandbox is newVhostSandbox with a server that reads on past a
// request it cannot parse (pastErrors), or Python's own.
func newBodySandbox(t *testing.T, pastErrors bool) (*netSandbox, *nettest.Vhosts) {
	t.Helper()
	if !pastErrors {
		return newVhostSandbox(t)
	}
	n := newNetSandbox(t)
	if !tunOpens() {
		t.Skip("this user cannot open /dev/net/tun (TestIntegrationNetworkAllowList covers the refusal)")
	}
	v := n.h.ServeVhostsPastErrors(t)
	n.sb.Network = spec.Network{Enabled: true, Allow: []string{fmt.Sprintf("allowed.test:%d", v.Port)}}
	return n, v
}

// TestIntegrationNetworkAllowListBodyLength: a GET with a Content-Length
// whose body is a request for other.test; the server ignores the body.
func TestIntegrationNetworkAllowListBodyLength(t *testing.T) {
	n, v := newBodySandbox(t, false)
	bodyNotRead(t, n, v, "GET / HTTP/1.1\r\nHost: allowed.test\r\n"+bodyLength+"\r\n"+smuggledOther)
}

// TestIntegrationNetworkAllowListBodyExpect: the same with Expect:
// 100-continue, which the server answers before ignoring the body.
func TestIntegrationNetworkAllowListBodyExpect(t *testing.T) {
	n, v := newBodySandbox(t, false)
	bodyNotRead(t, n, v, "GET / HTTP/1.1\r\nHost: allowed.test\r\nExpect: 100-continue\r\n"+bodyLength+"\r\n"+smuggledOther)
}

// TestIntegrationNetworkAllowListBodyChunked: a chunked body holding the
// request for other.test, to a server that ignores the body, answers the
// chunk-size line 400 and reads on.
func TestIntegrationNetworkAllowListBodyChunked(t *testing.T) {
	n, v := newBodySandbox(t, true)
	bodyNotRead(t, n, v, fmt.Sprintf("GET / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(smuggledOther), smuggledOther))
}

// TestIntegrationNetworkAllowListBodyHTTP10: an HTTP/1.0 GET with a body,
// kept alive by its Connection field.
func TestIntegrationNetworkAllowListBodyHTTP10(t *testing.T) {
	n, v := newBodySandbox(t, false)
	bodyNotRead(t, n, v, "GET / HTTP/1.0\r\nHost: allowed.test\r\nConnection: keep-alive\r\n"+bodyLength+"\r\n"+smuggledOther)
}

// TestIntegrationNetworkAllowListBodyThenNewConnection: ordinary clients
// are not hurt: curl posting twice (--data) gets both answers, the
// second on a new connection, and two GETs still share one.
func TestIntegrationNetworkAllowListBodyThenNewConnection(t *testing.T) {
	n, v := newBodySandbox(t, false)
	host := fmt.Sprintf("allowed.test:%d", v.Port)
	url := "http://" + host + "/"
	o := n.run(curlArgs("-w", " %{num_connects}\n", "--data", "a=1&b=2", url, url)...)
	posted := "site " + host + ": the content of " + host + ", 7 bytes posted\n 1\n"
	if o.res.FailureType != runner.FailureNone || o.stdout != posted+posted {
		t.Fatalf("two POSTs: %+v, %q, %q; want %q twice", o.res, o.stdout, o.stderr, posted)
	}
	noDenial(t, o)
	o = n.run(curlArgs("-w", " %{num_connects}\n", url, url)...)
	got := "site " + host + ": the content of " + host + "\n"
	if o.res.FailureType != runner.FailureNone || o.stdout != got+" 1\n"+got+" 0\n" {
		t.Fatalf("two GETs: %+v, %q, %q; want the second on the first's connection", o.res, o.stdout, o.stderr)
	}
	noDenial(t, o)
	if s := v.Served(); !slices.Equal(s, []string{host, host, host, host}) {
		t.Fatalf("served %q; want %s 4 times", s, host)
	}
}

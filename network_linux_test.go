package cordon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationAllowListAudited: a sandbox with an allow list, run as
// the CLI runs it (a project with an audit log): curl gets the allowed
// name's answer byte for byte, and that connection is a net record; a
// name and a port the list does not allow make the runs network_denied
// with the name, the port and the list, each refusal is a net record,
// and nothing for the refused name reached the test host. Root, and
// rootless in hack/test-rootless.sh.
func TestIntegrationAllowListAudited(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test", "other.test")
	if f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0); err != nil {
		t.Skipf("this user cannot open /dev/net/tun (%v); runner's TestIntegrationNetworkAllowList checks the refusal", err)
	} else {
		f.Close()
	}
	r, err := runnerlinux.New(runner.Options{StateDir: t.TempDir(), Resolver: h.DNS})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := &spec.Config{Audit: log, AuditRequired: true, Sandbox: spec.Sandbox{Root: dir, System: spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true, Env: spec.Env{Pass: []string{"PATH"}}, Network: spec.Network{Enabled: true, Allow: h.Allow("allowed.test")}}}
	sb, err := cordon.NewProject(cfg, cordon.WithRunner(r)).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	run := func(url string, args ...string) (cordon.Result, string) {
		t.Helper()
		var out bytes.Buffer
		res, err := sb.Run(context.Background(), append([]string{"curl", "-fsS", "--max-time", "20", url}, args...), cordon.Stdout(&out), cordon.Stderr(io.Discard))
		if err != nil {
			t.Fatalf("Run %s: %v", url, err)
		}
		return res, out.String()
	}
	list := "[" + strings.Join(h.Allow("allowed.test"), ", ") + "]"
	other := 8080
	for other == h.HTTPPort || other == h.HTTPSPort || other == h.EchoPort {
		other++
	}
	if res, out := run(h.URL("http", "allowed.test")); res.FailureType != runner.FailureNone || out != h.Body {
		t.Fatalf("allowed: %+v, %q; want %q", res, out, h.Body)
	}
	// An absolute-form request whose Host names another site (issue 21,
	// finding 7): curl sends "GET http://allowed.test:PORT/ HTTP/1.1" with
	// "Host: other.test".
	fronted := fmt.Sprintf("the request target names allowed.test:%d but its Host header names other.test", h.HTTPPort)
	for _, c := range []struct {
		url, detail string
		args        []string
	}{
		{h.URL("http", "other.test"), "other.test is not in the allow list " + list, nil},
		{fmt.Sprintf("http://allowed.test:%d/", other), fmt.Sprintf("allowed.test:%d is not allowed: allowed.test is allowed on port %d, %d, %d only", other, h.HTTPPort, h.HTTPSPort, h.EchoPort), nil},
		{h.URL("http", "allowed.test"), fronted, []string{"--request-target", h.URL("http", "allowed.test"), "-H", "Host: other.test"}},
	} {
		if res, out := run(c.url, c.args...); res.FailureType != runner.FailureNetworkDenied || !strings.Contains(res.FailureDetail, c.detail) || out != "" {
			t.Errorf("%s: %+v, %q; want network_denied saying %q", c.url, res, out, c.detail)
		}
	}
	if h.Saw("other.test") {
		t.Error("the test host was asked for other.test")
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allowed, refusedName, refusedPort, refusedHost bool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		e := rec.Network
		if rec.Event != audit.EventNet || e == nil {
			continue
		}
		switch {
		case e.Proto == "tcp" && e.Decision == netguard.Allow && e.Host == "allowed.test" && int(e.Port) == h.HTTPPort && e.BytesIn >= int64(len(h.Body)):
			allowed = true
		case e.Proto == "dns" && e.Decision == netguard.Deny && e.Reason == netguard.ReasonDNSRefused && strings.Contains(e.Detail, "other.test is not in the allow list "+list):
			refusedName = true
		case e.Proto == "tcp" && e.Decision == netguard.Deny && e.Reason == netguard.ReasonPort && e.Host == "allowed.test" && int(e.Port) == other:
			refusedPort = true
		case e.Proto == "tcp" && e.Decision == netguard.Deny && e.Reason == netguard.ReasonHTTPHost && strings.Contains(e.Detail, fronted):
			refusedHost = true
		}
	}
	if !allowed || !refusedName || !refusedPort || !refusedHost {
		t.Errorf("audit log %s: allowed connection %v, refused name %v, refused port %v, refused Host %v; want net records of all four", log, allowed, refusedName, refusedPort, refusedHost)
	}
}

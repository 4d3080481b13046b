package linux_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

func benchSandbox(b *testing.B) *spec.Sandbox {
	root := b.TempDir()
	return &spec.Sandbox{Root: root, System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true, Env: spec.Env{Pass: []string{"PATH"}}}
}

// BenchmarkNetworkStartup: runs of `true` with network: false and with an
// allow list (the tun device, its set-up and the guard), interleaved (in
// alternating order) so that both meet the same load; it reports the medians and the median of
// the paired differences.
func BenchmarkNetworkStartup(b *testing.B) {
	h := nettest.NewHost(b, "allowed.test")
	r, err := runnerlinux.New(runner.Options{StateDir: b.TempDir(), Resolver: h.DNS})
	if err != nil {
		b.Fatal(err)
	}
	off := benchSandbox(b)
	allow := benchSandbox(b)
	allow.Network = spec.Network{Enabled: true, Allow: h.Allow("allowed.test")}
	one := func(sb *spec.Sandbox) time.Duration {
		start := time.Now()
		res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: []string{"true"}, Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.FailureType != runner.FailureNone {
			b.Fatalf("run: %+v, %v", res, err)
		}
		return time.Since(start)
	}
	var offs, allows, diffs []float64
	i := 0
	for b.Loop() {
		// Alternate which goes first: a run pays for what the one before
		// left (its cgroup's removal, its device's).
		var o, a time.Duration
		if i++; i%2 == 0 {
			o, a = one(off), one(allow)
		} else {
			a, o = one(allow), one(off)
		}
		offs, allows, diffs = append(offs, ms(o)), append(allows, ms(a)), append(diffs, ms(a)-ms(o))
	}
	b.ReportMetric(median(offs), "ms-network-false")
	b.ReportMetric(median(allows), "ms-allow-list")
	b.ReportMetric(median(diffs), "ms-added")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkNetworkThroughput: one HTTP stream of 1 GiB from a test host,
// read by curl in the sandbox, through the guard and with network: true.
func BenchmarkNetworkThroughput(b *testing.B) {
	h := nettest.NewHost(b, "allowed.test")
	r, err := runnerlinux.New(runner.Options{StateDir: b.TempDir(), Resolver: h.DNS})
	if err != nil {
		b.Fatal(err)
	}
	const size = 1 << 30
	for _, c := range []struct {
		name string
		net  spec.Network
		url  string
	}{
		{"allow-list", spec.Network{Enabled: true, Allow: h.Allow("allowed.test")}, h.URL("http", "allowed.test")},
		{"network=true", spec.Network{Enabled: true}, fmt.Sprintf("http://%s:%d/", h.Addr, h.HTTPPort)},
	} {
		b.Run(c.name, func(b *testing.B) {
			sb := benchSandbox(b)
			sb.Network = c.net
			var speed float64
			for b.Loop() {
				var out strings.Builder
				res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Stdout: &out, Stderr: io.Discard,
					Args: []string{"curl", "-fsS", "-o", "/dev/null", "-w", "%{speed_download}", c.url + "zeros?n=" + strconv.Itoa(size)}})
				if err != nil || res.FailureType != runner.FailureNone {
					b.Fatalf("run: %+v, %v", res, err)
				}
				speed, _ = strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
			}
			b.ReportMetric(speed*8/1e9, "Gbit/s")
		})
	}
}

// BenchmarkNetworkGitClone: git clones a 50 MB repository (one file of
// random bytes) over HTTP from a test host, through the guard and with
// network: true.
func BenchmarkNetworkGitClone(b *testing.B) {
	h := nettest.NewHost(b, "allowed.test")
	r, err := runnerlinux.New(runner.Options{StateDir: b.TempDir(), Resolver: h.DNS})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 50<<20)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	h.ServeGit(b, map[string]string{"blob": string(data)})
	for _, c := range []struct {
		name string
		net  spec.Network
		url  string
	}{
		{"allow-list", spec.Network{Enabled: true, Allow: h.Allow("allowed.test")}, h.URL("http", "allowed.test")},
		{"network=true", spec.Network{Enabled: true}, fmt.Sprintf("http://%s:%d/", h.Addr, h.HTTPPort)},
	} {
		b.Run(c.name, func(b *testing.B) {
			sb := benchSandbox(b)
			sb.Network = c.net
			i := 0
			for b.Loop() {
				i++
				res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Stdout: io.Discard, Stderr: io.Discard,
					Args: []string{"git", "clone", "-q", c.url + "git/repo.git", fmt.Sprintf("%s/clone%d", sb.Root, i)}})
				if err != nil || res.FailureType != runner.FailureNone {
					b.Fatalf("run: %+v, %v", res, err)
				}
			}
		})
	}
}

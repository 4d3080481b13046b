package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/cordon-run/cordon/spec"
)

// TestEnforce is the one table of what each backend cannot enforce: with
// require_os_sandbox a gap is refused; without it, it is dropped from the
// sandbox the backend builds (narrower, never wider) and reported, except
// the parts whose dropping would change what the sandbox means.
func TestEnforce(t *testing.T) {
	h := hostFacts(noDelegation, false)
	allow := func(s *spec.Sandbox) { s.Network = spec.Network{Enabled: true, Allow: []string{"github.com:443"}} }
	limits := func(s *spec.Sandbox) { s.Limits = spec.Limits{Memory: 1 << 30, Pids: 100, CPUs: 1.5, Timeout: 5e9} }
	remap := func(s *spec.Sandbox) { s.Mounts = []spec.Mount{{Source: "/src/cache", Target: "/cache"}} }
	tests := []struct {
		name              string
		b                 Backend
		mod               func(*spec.Sandbox)
		require           bool
		refused, degraded []string // keys
		mention           string
	}{
		{"plain", BackendLibcontainer, func(*spec.Sandbox) {}, true, nil, nil, ""},
		{"root allow list refused", BackendLibcontainer, allow, true, []string{"network.allow"}, nil, "/dev/net/tun cannot be opened"},
		{"root allow list dropped", BackendLibcontainer, allow, false, nil, []string{"network.allow"}, "network stays off"},
		{"root enforces limits", BackendLibcontainer, limits, true, nil, nil, ""},
		{"rootless limits refused", BackendRootless, limits, true, []string{"limits"}, nil, "memory, pids, cpus"},
		{"rootless limits dropped", BackendRootless, limits, false, nil, []string{"limits"}, "no cgroup"},
		{"libcontainer remaps mounts", BackendRootless, remap, true, nil, nil, ""},
		{"seatbelt remap always refused", BackendSeatbelt, remap, false, []string{"mounts.target"}, nil, "cannot remap"},
		{"seatbelt limits one by one", BackendSeatbelt, limits, true, []string{"limits", "limits", "limits"}, nil, "set require_os_sandbox: false"},
		{"seatbelt limits dropped", BackendSeatbelt, limits, false, nil, []string{"limits", "limits", "limits"}, "not enforced on macOS"},
		{"seatbelt unicode", BackendSeatbelt, func(s *spec.Sandbox) { s.Deny = []string{s.Root + "/café"} }, false, []string{"names.unicode"}, nil, "Unicode"},
		{"seatbelt ascii below a unicode root", BackendSeatbelt, func(s *spec.Sandbox) { s.Root = "/Users/josé/p"; s.Deny = []string{"/Users/josé/p/.env"} }, true, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &spec.Sandbox{Root: "/w", System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: tt.require}
			tt.mod(sb)
			before := sb.Clone()
			e := Enforce(tt.b, sb, h)
			keys := func(gs []Gap) []string {
				var out []string
				for _, g := range gs {
					out = append(out, g.Key)
				}
				return out
			}
			if !slices.Equal(keys(e.Refused), tt.refused) || !slices.Equal(keys(e.Unenforced), tt.degraded) {
				t.Fatalf("refused %v, unenforced %v; want %v and %v", e.Refused, e.Unenforced, tt.refused, tt.degraded)
			}
			all := strings.Join(append(e.RefusedDetails(), e.UnenforcedDetails()...), "\n")
			if !strings.Contains(all, tt.mention) {
				t.Errorf("%q does not mention %q", all, tt.mention)
			}
			err := e.Err()
			var ue *UnenforceableError
			if (err != nil) != (len(tt.refused) > 0) || (err != nil && (!errors.Is(err, ErrUnenforceable) || !errors.As(err, &ue) || len(ue.Features) != len(tt.refused))) {
				t.Errorf("Err() = %v", err)
			}
			if !sameSandbox(sb, before) {
				t.Error("Enforce changed the caller's sandbox")
			}
			if slices.Contains(tt.degraded, "network.allow") && e.Sandbox.Network.Enabled {
				t.Error("a dropped allow list left the network on")
			}
			if slices.Contains(tt.degraded, "limits") && tt.b == BackendRootless && (e.Sandbox.Limits.Memory != 0 || e.Sandbox.Limits.Timeout == 0) {
				t.Errorf("limits after dropping: %+v", e.Sandbox.Limits)
			}
		})
	}
	if e := Enforce(BackendSeatbelt, nil, h); e.Sandbox != nil || e.Err() != nil {
		t.Error("a nil sandbox")
	}
}

func sameSandbox(a, b *spec.Sandbox) bool {
	da, _ := spec.SandboxDigest(a)
	db, _ := spec.SandboxDigest(b)
	return da == db
}

// TestUnenforceableErrorMessages: a Linux refusal names the way out once; a
// Seatbelt refusal's sentences carry their own.
func TestUnenforceableErrorMessages(t *testing.T) {
	h := hostFacts(noDelegation, false)
	sb := &spec.Sandbox{Root: "/w", RequireOSSandbox: true, Network: spec.Network{Enabled: true, Allow: []string{"a.org"}}}
	msg := Enforce(BackendLibcontainer, sb, h).Err().Error()
	if !strings.HasPrefix(msg, "this Linux host cannot enforce this sandbox: network allow list (a.org)") || !strings.HasSuffix(msg, "(cordon then reports what was not enforced)") {
		t.Errorf("linux message %q", msg)
	}
	// macOS enforces it with cordon's proxy.
	if err := Enforce(BackendSeatbelt, sb, h).Err(); err != nil {
		t.Errorf("seatbelt refuses an allow list: %v", err)
	}
	if l := Limitations(BackendRootless, h); len(l) != 2 || !strings.HasPrefix(l[1], "limits: ") {
		t.Errorf("Limitations(rootless, h) = %q", l)
	}
	if c := LimitationCaps(BackendSeatbelt, h); len(c) != 4 || c[0].OK || c[0].Name != "not enforced: limits" {
		t.Errorf("limitationCaps(seatbelt) = %+v", c)
	}
}

// TestPlan: one call refuses (and builds no spec) or drops and translates,
// recording what was dropped in the spec.
func TestPlan(t *testing.T) {
	h := hostFacts(noDelegation, false)
	sb := &spec.Sandbox{Root: t.TempDir(), System: spec.System{Kind: spec.SystemNone}, RequireOSSandbox: true,
		Network: spec.Network{Enabled: true, Allow: []string{"a.org"}}, Limits: spec.Limits{Memory: 64 << 20}}
	ro := RunOptions(BackendRootless, "x", "/run/x/rootfs", h)
	p, e, err := Plan(BackendRootless, sb, Process([]string{"true"}, sb.Root, false), ro, h)
	if !errors.Is(err, ErrUnenforceable) || p != nil || len(e.Refused) != 2 {
		t.Fatalf("plan %v, refused %v, err %v; want a refusal of both and no plan", p, e.Refused, err)
	}
	sb.RequireOSSandbox = false
	p, e, err = Plan(BackendRootless, sb, Process([]string{"true"}, sb.Root, false), ro, h)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Unenforced, []string{"network.allow", "limits"}) || p.Spec.Annotations[spec.AnnotationNetwork] != "off" {
		t.Errorf("unenforced %v, network %q", p.Unenforced, p.Spec.Annotations[spec.AnnotationNetwork])
	}
	if !slices.ContainsFunc(p.Spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace }) {
		t.Error("no network namespace")
	}
	if r := p.Spec.Linux.Resources; r != nil && r.Memory != nil && r.Memory.Limit != nil {
		t.Error("a rootless spec carries a memory limit no cgroup enforces")
	}
	if len(e.UnenforcedDetails()) != 2 {
		t.Errorf("details %v", e.UnenforcedDetails())
	}
	// `cordon spec` prints this user's plan.
	sp, _, err := SpecPlan(sb, []string{"sh"}, h)
	if err != nil || !slices.Contains(sp.Unenforced, "network.allow") || sp.Spec.Process.Cwd != sb.Root {
		t.Errorf("SpecPlan = %+v, %v", sp, err)
	}
}

// hostFacts is a host that offers rootless runs d, where the network
// guard runs or not.
func hostFacts(d Delegation, guard bool) HostFacts {
	h := delegated(d)
	h.Guard = func() (bool, string) {
		if guard {
			return true, ""
		}
		return false, "/dev/net/tun cannot be opened (no such device)"
	}
	return h
}

// TestEnforceNetworkGuarded: where the guard runs, the Linux backends
// enforce an allow list (nothing refused or dropped, the network
// namespace kept, no unenforced annotation), doctor lists no gap for it,
// and Seatbelt still refuses it.
func TestEnforceNetworkGuarded(t *testing.T) {
	h := hostFacts(noDelegation, true)
	sb := &spec.Sandbox{Root: t.TempDir(), System: spec.System{Kind: spec.SystemNone}, RequireOSSandbox: true,
		Network: spec.Network{Enabled: true, Allow: []string{"github.com:443"}}}
	for _, b := range []Backend{BackendLibcontainer, BackendRootless} {
		e := Enforce(b, sb, h)
		if e.Err() != nil || len(e.Unenforced) != 0 || !slices.Equal(e.Sandbox.Network.Allow, sb.Network.Allow) {
			t.Fatalf("%s: %+v", b, e)
		}
		p, _, err := Plan(b, sb, Process([]string{"true"}, sb.Root, false), RunOptions(b, "x", "/run/x/rootfs", h), h)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(p.Unenforced, "network.allow") || strings.Contains(p.Spec.Annotations[spec.AnnotationUnenforced], "network.allow") ||
			!slices.ContainsFunc(p.Spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace }) {
			t.Errorf("%s: unenforced %v, annotations %v", b, p.Unenforced, p.Spec.Annotations)
		}
		for _, l := range Limitations(b, h) {
			if strings.HasPrefix(l, "network.allow") {
				t.Errorf("%s: doctor lists %q", b, l)
			}
		}
	}
	if e := Enforce(BackendSeatbelt, sb, h); e.Err() != nil || len(e.Unenforced) != 0 || !slices.Equal(e.Sandbox.Network.Allow, sb.Network.Allow) ||
		NetworkEnforcement(BackendSeatbelt, sb, h) != SeatbeltNetwork {
		t.Errorf("seatbelt: %+v, %q", e, NetworkEnforcement(BackendSeatbelt, sb, h))
	}
	if how := NetworkEnforcement(BackendRootless, sb, h); !strings.Contains(how, "tun device") {
		t.Errorf("NetworkEnforcement = %q", how)
	}
	if how := NetworkEnforcement(BackendLibcontainer, sb, hostFacts(noDelegation, false)); how != "" {
		t.Errorf("NetworkEnforcement without the guard = %q", how)
	}
}

package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// noDelegation is a host whose rootless users have no delegated cgroup.
var noDelegation = Delegation{Problem: "this process's cgroup /x is not delegated to uid 4242, and no systemd answers on the user's D-Bus, so rootless runs have no cgroup to enforce them"}

// cgroupV1 is a cgroup v1 host, where no delegation can help.
var cgroupV1 = Delegation{Problem: "cgroup v1 has no delegation to unprivileged users, so rootless runs have no cgroup to enforce them", V1: true}

// delegated is a host whose rootless users are offered d, with no network
// guard.
func delegated(d Delegation) HostFacts {
	return HostFacts{Delegation: func() Delegation { return d }}
}

// TestRootlessLimitsDelegation: a rootless run's limits are enforced when
// the user's delegated cgroup offers their controllers, in a child cgroup
// per run; otherwise they are refused, naming what is missing and the way
// out, and the run gets no cgroup path.
func TestRootlessLimitsDelegation(t *testing.T) {
	full := Delegation{Base: "/user.slice/user-4242", Controllers: []string{"cpu", "memory", "pids"}}
	sd := Delegation{Base: "/user.slice/user-1000.slice/user@1000.service", Controllers: []string{"cpu", "memory", "pids"}, Systemd: true}
	sdPids := Delegation{Base: "/user.slice/user-1000.slice/user@1000.service", Controllers: []string{"pids"}, Systemd: true}
	pidsOnly := Delegation{Base: "/user.slice/user-4242", Controllers: []string{"pids"}}
	sb := func(l spec.Limits) *spec.Sandbox {
		return &spec.Sandbox{Root: "/w", System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true, Limits: l}
	}
	all := spec.Limits{Memory: 64 << 20, Pids: 10, CPUs: 0.5}
	tests := []struct {
		name    string
		d       Delegation
		limits  spec.Limits
		path    string
		refusal []string // substrings of the refusal; nil: none
	}{
		{"delegated: all enforced", full, all, "/user.slice/user-4242/cordon-r1", nil},
		{"delegated, no limits: no cgroup", full, spec.Limits{Timeout: 5e9}, "", nil},
		{"systemd: a scope per run", sd, all, "user.slice:cordon:r1", nil},
		{"systemd without the memory controller", sdPids, spec.Limits{Memory: 1 << 20}, "", []string{"lacks the memory controller"}},
		{"controllers missing", pidsOnly, all, "", []string{"limits memory, pids, cpus", "lacks the memory, cpu controller", "Delegate=memory pids cpu"}},
		{"only the delegated controller", pidsOnly, spec.Limits{Pids: 10}, "/user.slice/user-4242/cordon-r1", nil},
		{"no delegation", noDelegation, spec.Limits{Memory: 64 << 20}, "", []string{"not delegated to uid 4242", "systemd-run --user --scope -p Delegate=yes", "or run as root"}},
		{"cgroup v1: delegation cannot help", cgroupV1, spec.Limits{Memory: 64 << 20}, "", []string{"no cgroup to enforce them", "on cgroup v1 no systemd scope or delegated subtree can help: run as root, boot the host with cgroup v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := delegated(tt.d)
			s := sb(tt.limits)
			if got := RootlessCgroupsPath(s, "cordon-r1", h); got != tt.path {
				t.Errorf("cgroups path %q, want %q", got, tt.path)
			}
			err := Enforce(BackendRootless, s, h).Err()
			if (err != nil) != (tt.refusal != nil) {
				t.Fatalf("Err() = %v, want a refusal: %v", err, tt.refusal != nil)
			}
			for _, want := range tt.refusal {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q does not say %q", err, want)
				}
			}
		})
	}
	if l := Limitations(BackendRootless, delegated(full)); slices.ContainsFunc(l, func(s string) bool { return strings.HasPrefix(s, "limits:") }) {
		t.Errorf("Limitations(rootless) with delegation lists limits: %q", l)
	}
	if l := Limitations(BackendRootless, delegated(noDelegation)); !slices.ContainsFunc(l, func(s string) bool { return strings.HasPrefix(s, "limits:") }) {
		t.Errorf("Limitations(rootless) without delegation misses limits: %q", l)
	}
}

package runner

import (
	"sync"

	"github.com/cordon-run/cordon/spec"
)

// HostFacts is what the contract needs to know of the host it runs on:
// the table of what a backend cannot enforce, SpecPlan and doctor read it.
// The backend probes the host (runner/linux on Linux) and passes the facts
// in with SetHostFacts; each probe runs when a row first needs it. A nil
// probe means the host has none of it, as off Linux.
type HostFacts struct {
	// Guard reports whether cordon's network guard can run here, and why
	// not.
	Guard func() (bool, string)
	// Delegation reads the cgroup v2 subtree this host offers a rootless
	// run.
	Delegation func() Delegation
	// Kernel reads what the OCI translation needs to know of the kernel.
	Kernel func() spec.Host
}

var (
	hostMu    sync.Mutex
	hostFacts HostFacts
	hostGuard = sync.OnceValues(HostFacts{}.guard)
)

// SetHostFacts passes in the facts of this host: the backend does, once,
// before the first run (its tests again, to stand in for the host).
func SetHostFacts(h HostFacts) {
	hostMu.Lock()
	defer hostMu.Unlock()
	hostFacts = h
	hostGuard = sync.OnceValues(h.guard)
}

// guard asks h's Guard; no guard off Linux.
func (h HostFacts) guard() (bool, string) {
	if h.Guard == nil {
		return false, "cordon's network guard needs Linux"
	}
	return h.Guard()
}

func host() HostFacts {
	hostMu.Lock()
	defer hostMu.Unlock()
	return hostFacts
}

// networkGuardAvailable reports whether this host can enforce a network
// allow list, and why not: probed once per SetHostFacts.
func networkGuardAvailable() (bool, string) {
	hostMu.Lock()
	g := hostGuard
	hostMu.Unlock()
	return g()
}

// HostDelegation reads what this host offers a rootless run.
func HostDelegation() Delegation {
	if d := host().Delegation; d != nil {
		return d()
	}
	return Delegation{Problem: "this OS has no cgroups"}
}

// ProbeHost returns the kernel facts of this host: spec.ModernHost when no
// backend probes them, as off Linux (a spec printed there is for some
// Linux machine, whose runner probes its own kernel).
func ProbeHost() spec.Host {
	if k := host().Kernel; k != nil {
		return k()
	}
	return spec.ModernHost()
}

// HostGuard reports whether this host can enforce a network allow list,
// and why not; it is probed once.
func HostGuard() (bool, string) { return guardProbe() }

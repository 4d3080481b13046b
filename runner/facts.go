package runner

import (
	"github.com/cordon-run/cordon/spec"
)

// HostFacts is what the contract needs to know of the host it runs on:
// the table of what a backend cannot enforce (Enforce), the plan of a run
// (Plan, RunOptions, SpecPlan) and doctor read it. The backend probes the
// host (runner/linux's Facts on Linux) and passes the facts in as a value;
// each probe runs when a row first needs it. The zero value is a host with
// none of it, as off Linux: no network guard, no cgroups, and the kernel
// facts of spec.ModernHost (a spec printed there is for some Linux machine,
// whose runner probes its own kernel).
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

// NetworkGuard reports whether this host can enforce a network allow list,
// and why not.
func (h HostFacts) NetworkGuard() (bool, string) {
	if h.Guard == nil {
		return false, "cordon's network guard needs Linux"
	}
	return h.Guard()
}

// RootlessDelegation reads what this host offers a rootless run.
func (h HostFacts) RootlessDelegation() Delegation {
	if h.Delegation == nil {
		return Delegation{Problem: "this OS has no cgroups"}
	}
	return h.Delegation()
}

// KernelHost returns the kernel facts of this host: spec.ModernHost when
// the backend probes none.
func (h HostFacts) KernelHost() spec.Host {
	if h.Kernel == nil {
		return spec.ModernHost()
	}
	return h.Kernel()
}

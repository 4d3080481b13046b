package runner

import (
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// delegation is what this host offers a rootless run for memory, pids and
// cpu limits: a cgroup v2 subtree the user owns, or why there is none.
type Delegation struct {
	// Base is the delegated cgroup, "/a/b" below the cgroup2 mount, in
	// which limited runs get their own child cgroup; "" when there is none.
	Base string
	// Controllers are the controllers Base offers (cgroup.controllers).
	Controllers []string
	// Systemd: Base is the cgroup of the user's systemd, which creates a
	// delegated scope per run when asked over the user's D-Bus; otherwise
	// Base is a cgroup the user owns and cordon creates runs' cgroups in.
	Systemd bool
	// Problem says why there is no delegated cgroup, when Base is "".
	Problem string
	// V1: the host runs cgroup v1, which delegates nothing to an
	// unprivileged user, so no way out through delegation exists.
	V1 bool
}

// Fix is the way out of a refusal of rootless limits on this host.
func (d Delegation) Fix() string {
	if d.V1 {
		return v1Fix
	}
	return delegationFix
}

// SystemdScopeSlice is the slice of the user's systemd that runs' scopes go
// in: cordon-<id>.scope in user.slice.
const SystemdScopeSlice = "user.slice"

// delegationFix is the way out of a refusal of rootless limits.
const delegationFix = "to enforce them rootless, let cordon reach your systemd, which it asks for a delegated scope " +
	"(a login sets XDG_RUNTIME_DIR, and the bus is $XDG_RUNTIME_DIR/bus), or start cordon in a cgroup v2 subtree " +
	"delegated to you: `systemd-run --user --scope -p Delegate=yes cordon ...`, or one root made, gave the " +
	"controllers and chowned to you, as systemd does for user@.service; or run as root"

// v1Fix is the way out on a cgroup v1 host, where no delegation helps.
const v1Fix = "on cgroup v1 no systemd scope or delegated subtree can help: run as root, boot the host with cgroup v2 " +
	"(systemd.unified_cgroup_hierarchy=1 on the kernel command line), or drop the memory, pids and cpus limits " +
	"(require_os_sandbox: false runs without them, and says so)"

// LimitControllers are the cgroup controllers the limits of sb need.
func LimitControllers(sb *spec.Sandbox) []string {
	var out []string
	if sb.Limits.Memory > 0 {
		out = append(out, "memory")
	}
	if sb.Limits.Pids > 0 {
		out = append(out, "pids")
	}
	if sb.Limits.CPUs > 0 {
		out = append(out, "cpu")
	}
	return out
}

// MissingControllers are those of want that d does not offer.
func (d Delegation) MissingControllers(want []string) []string {
	var out []string
	for _, c := range want {
		found := false
		for _, h := range d.Controllers {
			found = found || h == c
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// Enforces reports whether d can enforce the controllers want, and if not,
// why, as a clause for a refusal.
func (d Delegation) Enforces(want []string) (bool, string) {
	if d.Base == "" {
		return false, d.Problem
	}
	if m := d.MissingControllers(want); len(m) > 0 {
		return false, "the delegated cgroup " + d.Base + " lacks the " + strings.Join(m, ", ") +
			" controller (its cgroup.controllers: " + strings.Join(d.Controllers, " ") + "); its parent must enable it, as systemd's Delegate=memory pids cpu does"
	}
	return true, ""
}

// RootlessCgroupsPath is the cgroup a rootless run id of sb is put in when
// sb sets limits the delegation of host h can enforce: the systemd scope
// "user.slice:cordon:<id>" (libcontainer's slice:prefix:name form), or a
// child of the delegated cgroup; else "" (no cgroup: libcontainer leaves
// the run in cordon's own).
func RootlessCgroupsPath(sb *spec.Sandbox, id string, h HostFacts) string {
	want := LimitControllers(sb)
	if len(want) == 0 {
		return ""
	}
	d := h.RootlessDelegation()
	if ok, _ := d.Enforces(want); !ok {
		return ""
	}
	if d.Systemd {
		return SystemdScopeSlice + ":cordon:" + strings.TrimPrefix(id, "cordon-")
	}
	return strings.TrimSuffix(d.Base, "/") + "/" + id
}

package runner

import (
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// delegation is what this host offers a rootless run for memory, pids and
// cpu limits: a cgroup v2 subtree the user owns, or why there is none.
type delegation struct {
	// Base is the delegated cgroup, "/a/b" below the cgroup2 mount, in
	// which limited runs get their own child cgroup; "" when there is none.
	Base string
	// Controllers are the controllers Base offers (cgroup.controllers).
	Controllers []string
	// Problem says why there is no delegated cgroup, when Base is "".
	Problem string
}

// rootlessCgroup probes this host's delegation; a variable for tests.
var rootlessCgroup = probeDelegation

// delegationFix is the way out of a refusal of rootless limits.
const delegationFix = "to enforce them rootless, run cordon in a cgroup v2 subtree delegated to you: " +
	"`systemd-run --user --scope -p Delegate=yes cordon ...` with systemd, or one root made, gave the " +
	"controllers and chowned to you, as systemd does for user@.service; or run as root"

// limitControllers are the cgroup controllers the limits of sb need.
func limitControllers(sb *spec.Sandbox) []string {
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

// missingControllers are those of want that d does not offer.
func (d delegation) missingControllers(want []string) []string {
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

// enforces reports whether d can enforce the controllers want, and if not,
// why, as a clause for a refusal.
func (d delegation) enforces(want []string) (bool, string) {
	if d.Base == "" {
		return false, d.Problem
	}
	if m := d.missingControllers(want); len(m) > 0 {
		return false, "the delegated cgroup " + d.Base + " lacks the " + strings.Join(m, ", ") +
			" controller (its cgroup.controllers: " + strings.Join(d.Controllers, " ") + "); its parent must enable it, as systemd's Delegate=memory pids cpu does"
	}
	return true, ""
}

// rootlessCgroupsPath is the cgroup a rootless run id of sb is put in:
// a child of the delegated cgroup when sb sets limits that it can enforce,
// else "" (no cgroup: libcontainer leaves the run in cordon's own).
func rootlessCgroupsPath(sb *spec.Sandbox, id string) string {
	want := limitControllers(sb)
	if len(want) == 0 {
		return ""
	}
	d := rootlessCgroup()
	if ok, _ := d.enforces(want); !ok {
		return ""
	}
	return strings.TrimSuffix(d.Base, "/") + "/cordon-" + id
}

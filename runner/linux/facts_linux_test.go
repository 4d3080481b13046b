package linux

import (
	"github.com/cordon-run/cordon/runner"
)

// The delegations of the contract's tests (runner/cgroupdeleg_test.go).
var (
	noDelegation = runner.Delegation{Problem: "this process's cgroup /x is not delegated to uid 4242, and no systemd answers on the user's D-Bus, so rootless runs have no cgroup to enforce them"}
	cgroupV1     = runner.Delegation{Problem: "cgroup v1 has no delegation to unprivileged users, so rootless runs have no cgroup to enforce them", V1: true}
)

// guardFacts are this host's facts with a network guard probe that
// answers ok.
func guardFacts(ok bool) runner.HostFacts {
	f := Facts()
	f.Guard = func() (bool, string) {
		if ok {
			return true, ""
		}
		return false, "/dev/net/tun cannot be opened (no such device)"
	}
	return f
}

package linux

import (
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// The delegations of the contract's tests (runner/cgroupdeleg_test.go).
var (
	noDelegation = runner.Delegation{Problem: "this process's cgroup /x is not delegated to uid 4242, and no systemd answers on the user's D-Bus, so rootless runs have no cgroup to enforce them"}
	cgroupV1     = runner.Delegation{Problem: "cgroup v1 has no delegation to unprivileged users, so rootless runs have no cgroup to enforce them", V1: true}
)

// withFacts stands f in for this host's facts until t ends.
func withFacts(t *testing.T, f runner.HostFacts) {
	t.Helper()
	runner.SetHostFacts(f)
	t.Cleanup(func() { runner.SetHostFacts(Facts()) })
}

// withGuard stands in a network guard probe that answers ok.
func withGuard(t *testing.T, ok bool) {
	t.Helper()
	f := Facts()
	f.Guard = func() (bool, string) {
		if ok {
			return true, ""
		}
		return false, "/dev/net/tun cannot be opened (no such device)"
	}
	withFacts(t, f)
}

package linux

import (
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
)

// Facts are this host's facts as the contract reads them, from the probes
// of this package: whether /dev/net/tun opens, the cgroup delegation, the
// kernel.
func Facts() runner.HostFacts {
	return runner.HostFacts{Guard: networkGuardAvailable, Delegation: cgroup.ProbeDelegation, Kernel: ProbeHost}
}

// init passes this host's facts to the contract: importing the Linux
// backend is choosing it, so the enforcement table, SpecPlan and doctor see
// what this kernel offers.
func init() { runner.SetHostFacts(Facts()) }

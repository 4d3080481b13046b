package linux

import (
	"sync"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
)

// Facts are this host's facts as the contract reads them, from the probes
// of this package: whether /dev/net/tun opens (probed once per process),
// the cgroup delegation (read at each look: it can change), the kernel.
// The backend passes them to the enforcement table and the plan as a
// value; the root package passes them to SpecPlan and explain.
func Facts() runner.HostFacts {
	return runner.HostFacts{Guard: guardOnce, Delegation: cgroup.ProbeDelegation, Kernel: ProbeHost}
}

// guardOnce is networkGuardAvailable, probed once.
var guardOnce = sync.OnceValues(networkGuardAvailable)

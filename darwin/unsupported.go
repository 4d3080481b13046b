package darwin

import (
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Unsupported reports what of sb Seatbelt cannot enforce, from runner's one
// table of what each backend cannot enforce. refused are features that stop
// the run: remapped mounts and a rootfs always, limits when
// sb.RequireOSSandbox is true, and deny or protect names with non-ASCII
// characters. degraded are the limits when sb.RequireOSSandbox is false:
// the run goes ahead without them and reports them. Each entry is a
// sentence that names the feature and says it works on Linux. A network
// allow list is enforced, by the run's proxy (see Profile).
func Unsupported(sb *spec.Sandbox) (refused []string, degraded []string) {
	e := runner.Enforce(runner.BackendSeatbelt, sb, runner.HostFacts{})
	return e.RefusedDetails(), e.UnenforcedDetails()
}

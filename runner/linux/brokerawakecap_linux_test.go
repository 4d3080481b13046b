package linux_test

import (
	"os"
	"testing"

	"github.com/cordon-run/cordon/internal/awake"
)

// TestIntegrationKeeperOffUnderCPULimit: the broker's keeper spins outside
// the sandbox's cgroup, so under limits.cpus a command's creates (each an
// install of a descriptor, which pokes the keeper in a sandbox without
// the limit) leave it asleep: cordon spins no CPU the limit does not
// count. The same creates without the limit do spin it (the control).
func TestIntegrationKeeperOffUnderCPULimit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("limits.cpus needs a cgroup this user may write: root here (rootless has no delegated cgroup v2 on this host)")
	}
	if !awake.Start() {
		t.Skip("no keeper in this process (fewer than two CPUs, or CORDON_KEEP_AWAKE=0)")
	}
	creates := sh(`for i in $(seq 50); do echo x > q$i; done`)
	for _, tc := range []struct {
		name  string
		cpus  float64
		spins bool
	}{
		{"limits.cpus: 1", 1, false},
		{"no CPU limit", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.Limits.CPUs = tc.cpus
			before := keeperSettled(t)
			out := run(t, sb, "", creates...)
			if out.res.ExitCode != 0 {
				t.Fatalf("%+v %s", out.res, out.stderr)
			}
			if _, err := os.Stat(sb.Root + "/q50"); err != nil {
				t.Fatalf("the creates did not happen: %v", err)
			}
			if spun := keeperSettled(t) != before; spun != tc.spins {
				t.Fatalf("keeper spun: %v, want %v", spun, tc.spins)
			}
		})
	}
}

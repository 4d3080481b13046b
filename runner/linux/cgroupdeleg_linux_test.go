package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestPlanRefusesLimitsWithoutRunCgroup: when the delegation changes
// between the run's cgroup being chosen (none) and the table's look (a
// delegated cgroup), a rootless run with limits is refused, not handed to
// libcontainer with limits no cgroup of the run enforces.
func TestPlanRefusesLimitsWithoutRunCgroup(t *testing.T) {
	calls := 0
	full := runner.Delegation{Base: "/user.slice/user-4242", Controllers: []string{"cpu", "memory", "pids"}}
	f := Facts()
	f.Delegation = func() runner.Delegation {
		calls++
		if calls == 1 {
			return noDelegation
		}
		return full
	}
	st, err := openStateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{Root: t.TempDir(), System: spec.System{Kind: spec.SystemNone}, RequireOSSandbox: true, Limits: spec.Limits{Memory: 64 << 20}}
	run := &linuxRun{r: &linuxRunner{state: st, rootless: true, facts: f}, req: runner.Request{Sandbox: sb, Args: []string{"true"}}, id: "cordon-x"}
	err = run.plan()
	if !errors.Is(err, runner.ErrUnenforceable) || !strings.Contains(err.Error(), "no delegated cgroup for this run") {
		t.Fatalf("plan: %v; want a refusal", err)
	}
	if run.oci != nil || calls < 2 {
		t.Errorf("a spec was kept (%v) or the table was not asked (%d looks)", run.oci != nil, calls)
	}
}

package linux_test

import (
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/awake"
	"github.com/cordon-run/cordon/runner"
)

// keeperSettled waits until the broker's keeper has no spin under way
// (its spin counter unchanged over 100 ms) and returns the counter.
func keeperSettled(t *testing.T) uint64 {
	t.Helper()
	for i := 0; i < 300; i++ {
		n := awake.Spins()
		time.Sleep(100 * time.Millisecond)
		if awake.Spins() == n {
			return n
		}
	}
	t.Fatal("the keeper kept spinning with nothing running")
	return 0
}

// TestIntegrationSessionExecQuietsKeeper: a plain exec keeps the broker's
// keeper (internal/awake) from spinning through its hand-offs (a keeper
// spinning through the command's start slowed `cordon exec N -- true` by
// about 0.25 ms on a 2-vCPU VM), and the Quiet is bounded: a create of the
// command after awake.ExecQuiet (the broker installs its descriptor, which
// pokes the keeper) spins the keeper as in a run.
func TestIntegrationSessionExecQuietsKeeper(t *testing.T) {
	s := startSession(t, newSandbox(t))
	if !awake.Start() {
		t.Skip("no keeper in this process (fewer than two CPUs, or CORDON_KEEP_AWAKE=0)")
	}
	before := keeperSettled(t)
	late := execIn(t, s, runner.ExecRequest{Dir: "/tmp", Args: sh(`sleep 0.2; for i in 1 2 3; do echo x > q$i; done`)})
	if late.res.ExitCode != 0 {
		t.Fatalf("exec failed: %+v", late.res)
	}
	if after := keeperSettled(t); after == before {
		t.Fatalf("creates %v into an exec did not wake the keeper: the exec's Quiet outlived awake.ExecQuiet (%v), or the broker no longer pokes it before an install",
			200*time.Millisecond, awake.ExecQuiet)
	}
	if !awake.Start() {
		t.Fatal("the keeper is still quiet after the exec returned")
	}
	// An exec is quiet for awake.ExecQuiet at most: on a loaded machine
	// one may take longer, and its shim's chdir after the command may
	// then poke the keeper. So only execs that took less are counted.
	quiet := 0
	for i := 0; i < 200 && quiet < 20; i++ {
		before := keeperSettled(t)
		out := execIn(t, s, runner.ExecRequest{Dir: "/tmp", Args: []string{"true"}})
		if out.res.ExitCode != 0 {
			t.Fatalf("exec %d failed: %+v", i, out.res)
		}
		if time.Duration(out.res.DurationMS+1)*time.Millisecond > awake.ExecQuiet {
			continue
		}
		quiet++
		if after := keeperSettled(t); after != before {
			t.Fatalf("an exec of true that took under %v spun the keeper %d times: something poked it during the exec's Quiet",
				awake.ExecQuiet, after-before)
		}
	}
	if quiet < 20 {
		t.Fatalf("only %d of 200 execs of true took under %v (awake.ExecQuiet): too few to tell", quiet, awake.ExecQuiet)
	}
}

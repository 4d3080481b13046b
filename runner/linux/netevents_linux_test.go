package linux

import (
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/runner"
)

// execNet is what netSince gives one session exec that exited with code.
func execNet(run *linuxRun, mark netMark, code int) runner.Result {
	res := runner.Result{FailureType: runner.FailureNone}
	if code != 0 {
		res.ExitCode, res.FailureType = code, runner.FailureProcessError
	}
	run.netSince(&res, mark)
	return res
}

// TestSessionNetworkEventsBetweenExecs: a connection recorded after its
// exec's result was made and before the next exec began (a connection
// ends when both its sides have closed, which may be after curl exited)
// is reported by the next exec, once; it was in no result and no audit
// line.
func TestSessionNetworkEventsBetweenExecs(t *testing.T) {
	run := &linuxRun{netEvents: &eventLog{}}
	conn := netguard.Event{Time: time.Now().UTC(), Proto: "tcp", Host: "allowed.test", Decision: netguard.Allow}
	first := execNet(run, run.netMark(), 0)
	run.netEvents.add(conn) // between the two execs
	second := execNet(run, run.netMark(), 0)
	third := execNet(run, run.netMark(), 0)
	if len(first.Network) != 0 || len(second.Network) != 1 || second.Network[0] != conn || len(third.Network) != 0 {
		t.Fatalf("the connection was reported as %v, %v, %v; want by the second exec alone", first.Network, second.Network, third.Network)
	}
}

// TestSessionNetworkEventsConcurrentExecs: with two execs running at
// once, each event is reported by one of them, and a denial made while
// an exec ran explains its failure whichever reports it; a denial made
// before an exec began (a leftover of an earlier one) does not.
func TestSessionNetworkEventsConcurrentExecs(t *testing.T) {
	run := &linuxRun{netEvents: &eventLog{}}
	old := netguard.Event{Time: time.Now().UTC(), Proto: "dns", Host: "old.test", Decision: netguard.Deny, Reason: netguard.ReasonNotAllowed, Detail: "old.test denied"}
	run.netEvents.add(old) // before either exec began
	a, b := run.netMark(), run.netMark()
	deny := netguard.Event{Time: time.Now().UTC(), Proto: "dns", Host: "other.test", Decision: netguard.Deny, Reason: netguard.ReasonNotAllowed, Detail: "other.test denied"}
	run.netEvents.add(deny)
	resB := execNet(run, b, 6)
	resA := execNet(run, a, 6)
	if len(resB.Network) != 2 || resB.Network[0] != old || resB.Network[1] != deny || len(resA.Network) != 0 {
		t.Fatalf("reported: %v and %v; want both events once, by the exec that ended first", resB.Network, resA.Network)
	}
	for name, res := range map[string]runner.Result{"a": resA, "b": resB} {
		if res.FailureType != runner.FailureNetworkDenied || !strings.HasPrefix(res.FailureDetail, "other.test denied") || strings.Contains(res.FailureDetail, "more") {
			t.Errorf("exec %s: %s %q; want network_denied by other.test alone", name, res.FailureType, res.FailureDetail)
		}
	}
	// A later exec that fails is not typed by denials made before it.
	if res := execNet(run, run.netMark(), 6); res.FailureType != runner.FailureProcessError || len(res.Network) != 0 {
		t.Errorf("a later exec: %s %q, %v", res.FailureType, res.FailureDetail, res.Network)
	}
}

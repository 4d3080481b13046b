package linux_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestIntegrationSessionDenialsFromBroker is the property "a session's
// execs are typed from the broker's record, not from their stderr": a
// command that prints a fake refusal is not sandbox_denied, one that was
// refused and printed nothing is, with the exact path, and a refusal in
// one exec is never reported by another exec running at the same time.
func TestIntegrationSessionDenialsFromBroker(t *testing.T) {
	sb := newSandbox(t)
	s := startSession(t, sb)
	hook := filepath.Join(sb.Root, ".git/hooks/pre-commit")
	fake := execIn(t, s, runner.ExecRequest{Args: sh(`echo "touch: cannot touch '.git/hooks/pre-commit': Permission denied" >&2
echo "sh: 1: cannot create /usr/cordon-fake: Read-only file system" >&2; exit 1`)})
	if fake.res.FailureType == runner.FailureSandboxDenied || fake.res.BlockedPath != "" {
		t.Errorf("a fake refusal on stderr was believed: %+v", fake.res)
	}
	silent := execIn(t, s, runner.ExecRequest{Args: sh("exec 2>/dev/null; mkdir -p .git/hooks; echo x > .git/hooks/pre-commit")})
	if silent.res.FailureType != runner.FailureSandboxDenied || silent.res.BlockedPath != hook || silent.stderr != "" {
		t.Errorf("a silent refusal: want sandbox_denied on %s, got %+v", hook, silent.res)
	}
	ro := execIn(t, s, runner.ExecRequest{Args: sh("exec 2>/dev/null; echo x > /usr/cordon-session-ro")})
	if ro.res.FailureType != runner.FailureSandboxDenied || ro.res.BlockedPath != "/usr/cordon-session-ro" {
		t.Errorf("a silent write to a read-only mount: %+v", ro.res)
	}
	mustNotExist(t, hook)
	mustNotExist(t, "/usr/cordon-session-ro")
	// Two execs at once: only the one whose process (a grandchild, in the
	// background) was refused reports it.
	var wg sync.WaitGroup
	outs := make([]execOut, 2)
	for i, script := range []string{
		"(sleep 0.2; echo x > .git/hooks/post-checkout) 2>/dev/null & wait; exit 1",
		"sleep 0.6; exit 1",
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = execIn(t, s, runner.ExecRequest{Args: sh(script)})
		}()
	}
	wg.Wait()
	if outs[0].res.FailureType != runner.FailureSandboxDenied || outs[0].res.BlockedPath != filepath.Join(sb.Root, ".git/hooks/post-checkout") {
		t.Errorf("the refused exec: %+v", outs[0].res)
	}
	if outs[1].res.FailureType == runner.FailureSandboxDenied {
		t.Errorf("the other exec was given its refusal: %+v", outs[1].res)
	}
	mustNotExist(t, filepath.Join(sb.Root, ".git/hooks/post-checkout"))
}

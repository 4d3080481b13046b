package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIntegrationBrokerBlockedOpensDoNotStall: brokered calls that block
// (a FIFO's open for writing waits for a reader) do not keep the others
// from being received and performed: eight writers wait in their opens
// while the script makes a file, then reads the FIFOs. With a fixed four
// workers the fifth blocked open left none to receive. The limit only
// ends a run that would hang.
func TestIntegrationBrokerBlockedOpensDoNotStall(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Timeout = 2 * time.Minute
	out := run(t, sb, "", sh(`for i in 1 2 3 4 5 6 7 8; do mkfifo p$i; (echo w$i > p$i) & done
sleep 0.5; touch made; for i in 1 2 3 4 5 6 7 8; do cat p$i; done; wait`)...)
	if out.res.ExitCode != 0 {
		t.Fatalf("run: %+v %s", out.res, out.stderr)
	}
	for i := 1; i <= 8; i++ {
		if w := "w" + string(rune('0'+i)); !strings.Contains(out.stdout, w+"\n") {
			t.Errorf("writer %s's line did not come through the FIFO: %q", w, out.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(sb.Root, "made")); err != nil {
		t.Fatalf("the create made while the writers waited: %v", err)
	}
}

// TestIntegrationBrokerEndsWithAWaitingOpen: a run whose command leaves a
// writer waiting in its FIFO open (no reader ever comes) ends: the
// broker's worker performing that open is released when the sandbox is
// gone, instead of keeping the run waiting for ever.
func TestIntegrationBrokerEndsWithAWaitingOpen(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", sh("mkfifo p; (echo w > p &); sleep 0.3; echo done")...)
	if out.res.ExitCode != 0 || out.stdout != "done\n" {
		t.Fatalf("run: %+v %q %s", out.res, out.stdout, out.stderr)
	}
}

package linux_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// procGrab opens another process's ptrace-gated /proc entries (PID 1 is
// cordon's non-dumpable init), then waits holding whatever it got.
const procGrab = `
import os, sys, time
sync = sys.argv[1]
held = []
for path, flags in [("/proc/1/mem", os.O_RDWR), ("/proc/1/mem", os.O_WRONLY),
                    ("/proc/1/task/1/mem", os.O_RDWR), ("/proc/1/environ", os.O_RDONLY),
                    ("/proc/1/mem", os.O_RDONLY), ("/proc/1/auxv", os.O_RDONLY)]:
    try:
        held.append(os.open(path, flags))
    except OSError:
        pass
open(sync + "/started", "w").close()
while not os.path.exists(sync + "/go"):
    time.sleep(0.05)
`

// TestIntegrationBrokerProcOfOtherProcess is the security property "the
// broker never opens another process's /proc entry with more than the
// caller's rights": rootless, the broker's uid owns the sandbox's user
// namespace and so has ptrace access to its non-dumpable init, and an
// open of /proc/1/mem for writing went to the broker, which opened it.
// The host looks at the sandboxed process's descriptors itself: none of
// them is PID 1's memory, environment or auxv, with and without
// strict_deny.
func TestIntegrationBrokerProcOfOtherProcess(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run("strict="+strconv.FormatBool(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			sync := t.TempDir()
			sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
			done := make(chan runOut, 1)
			go func() { done <- run(t, sb, "", "python3", "-c", procGrab, sync) }()
			waitForFile(t, filepath.Join(sync, "started"))
			held := heldProcFiles(t, sync)
			if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			out := <-done
			if out.res.ExitCode != 0 {
				t.Fatalf("the script failed: exit %d, %s", out.res.ExitCode, out.stderr)
			}
			if len(held) > 0 {
				t.Fatalf("the sandboxed process holds %v: the broker opened another process's /proc entry for it", held)
			}
		})
	}
}

// heldProcFiles finds the sandboxed python (its command line names sync)
// from the host and returns the descriptors it holds on a /proc entry of
// another process.
func heldProcFiles(t *testing.T, sync string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "python3\x00") || !strings.Contains(string(cmd), sync) {
			continue
		}
		found = true
		fds, err := os.ReadDir("/proc/" + e.Name() + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			l, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name())
			if err == nil && strings.HasPrefix(l, "/proc/1/") {
				out = append(out, fd.Name()+" -> "+l)
			}
		}
	}
	if !found {
		t.Fatal("the sandboxed python was not found on the host")
	}
	return out
}

package linux_test

import (
	"os"
	"path/filepath"
	"testing"
)

// renameRace moves x to sub/.git again and again while another process
// renames x/hookz to x/hooks and back: the broker walks x and decides what
// it carries, so a hooks directory that appears between that walk and the
// move would land at sub/.git/hooks, which the host's next git commit in
// sub runs.
const renameRace = `
import os
os.makedirs("x/hookz"); os.makedirs("x/objects"); os.makedirs("x/refs"); os.makedirs("sub")
open("x/hookz/pre-commit", "w").write("#!/bin/sh\necho planted\n")
open("x/HEAD", "w").write("ref: refs/heads/main\n")
pid = os.fork()
if pid == 0:
    while True:
        try:
            os.rename("x/hookz", "x/hooks"); os.rename("x/hooks", "x/hookz")
        except OSError:
            pass
for _ in range(4000):
    try:
        os.rename("x", "sub/.git")
    except OSError:
        continue
    if os.path.isdir("sub/.git/hooks"):
        break
    os.rename("sub/.git", "x")
os.kill(pid, 9)
`

// TestIntegrationBrokerRenameWalkRace is the security property "a renamed
// directory carries nothing guarded, even when another process changes it
// while the broker decides": no hooks directory, and no hook, ever appears
// at sub/.git on the host.
func TestIntegrationBrokerRenameWalkRace(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = []string{ws + "/**/.git/hooks", ws + "/**/.git/config"}
	out := run(t, sb, "", "python3", "-c", renameRace)
	if out.res.ExitCode != 0 {
		t.Fatalf("the race script failed: exit %d, %s", out.res.ExitCode, out.stderr)
	}
	mustNotExist(t, filepath.Join(ws, "sub/.git/hooks/pre-commit"))
	mustNotExist(t, filepath.Join(ws, "sub/.git/hooks"))
	// The hook is still where the command could put it: the script ran.
	for _, p := range []string{"x/hookz", "x/hooks", "sub/.git/hookz"} {
		if _, err := os.Stat(filepath.Join(ws, p, "pre-commit")); err == nil {
			return
		}
	}
	t.Fatalf("the hook is nowhere after the run: the race never ran")
}

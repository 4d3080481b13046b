package mounts

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/mounts/decide"
	"github.com/cordon-run/cordon/spec"
)

// holdDirLock starts flock(1), another process, holding dir's lock (the
// one a sandbox's broker takes to decide there) until released.
func holdDirLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	cmd := exec.Command("flock", "-x", dir, "sh", "-c", "echo held; exec cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release = func() {
		in.Close() //nolint:errcheck,gosec // ends cat
		_ = cmd.Wait()
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		release()
		t.Fatalf("flock %s: %q %v", dir, line, err)
	}
	return release
}

// TestWriteLockHeldFailsClosed is the security property "the file tools
// decide a repository's shape under the same cross-process lock as the
// sandboxes' brokers": while another process (a broker deciding in r)
// holds r's lock, a Write that would make r/refs, or a hook file in
// r/hooks (decided on r too), fails with decide.ErrBusy and makes
// nothing; a Write of a name no shape rule looks at takes no lock and
// goes ahead; once the lock is let go the refused Write works.
func TestWriteLockHeldFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out the lock's timeout twice (about 10 s); go test ./... (make unit) runs it")
	}
	ws := t.TempDir()
	r := filepath.Join(ws, "r")
	for _, d := range []string{"r/objects", "r/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := New(&spec.Sandbox{Root: ws})
	if err != nil {
		t.Fatal(err)
	}
	release := holdDirLock(t, r)
	defer release()
	for _, p := range []string{"r/refs/heads/main", "r/hooks/pre-commit.sample"} {
		if err := tab.Write(p, "x\n"); !errors.Is(err, decide.ErrBusy) {
			t.Errorf("Write(%s) while r's lock is held: %v; want decide.ErrBusy", p, err)
		}
	}
	mustBeAbsent(t, filepath.Join(ws, "r/refs"))
	mustBeAbsent(t, filepath.Join(ws, "r/hooks/pre-commit.sample"))
	if err := tab.Write("r/notes.txt", "x\n"); err != nil {
		t.Errorf("Write(r/notes.txt), which no shape rule looks at, while r's lock is held: %v", err)
	}
	release()
	if err := tab.Write("r/refs/heads/main", "x\n"); err != nil {
		t.Errorf("Write(r/refs/heads/main) once the lock is let go: %v", err)
	}
}

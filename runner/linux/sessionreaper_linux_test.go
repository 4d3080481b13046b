package linux

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The reaper creates nothing: a state directory removed before it woke up
// (a test's temporary one) stays removed.
func TestSessionReaperCreatesNothing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "gone")
	reapSession(state, "cordon-0123456789abcdef", filepath.Join(state, "sessions", "n"))
	if _, err := os.Lstat(state); err == nil {
		t.Fatalf("the reaper created %s", state)
	}
}

// The caller's locked directory goes only once its lock is free: a new
// session of the same name that holds it keeps its socket.
func TestSessionReaperLockedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lock", "sock", "info.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	removeLockedDir(dir)
	if _, err := os.Lstat(filepath.Join(dir, "sock")); err != nil {
		t.Fatalf("the reaper removed a held session's socket: %v", err)
	}
	held.Close()
	removeLockedDir(dir)
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("%s is left with its lock free", dir)
	}
}

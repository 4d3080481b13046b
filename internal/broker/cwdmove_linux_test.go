package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBrokerCreateCwdMovedAfterCreate: the host renames the caller's
// working directory away after the broker made the caller's relative
// create in it and before its read-back (call.moved), and puts a symlink
// to a protected directory at the old name. The kernel moved the caller's
// working directory with the rename, and its own create had succeeded
// there: the call is run again from its arguments (retryOpen), so the file
// is made in the renamed directory, the open succeeds, nothing is made in
// the protected directory and nothing is refused. (Resolved again from the
// path it had built, the open went through the symlink and was refused.)
func TestBrokerCreateCwdMovedAfterCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(dir, "w")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var hostErr error
	testHookCreated = func() {
		once.Do(func() {
			hostErr = os.Rename(w, filepath.Join(dir, "w2"))
			if hostErr == nil {
				hostErr = os.Mkdir(filepath.Join(dir, "guard"), 0o755)
			}
			if hostErr == nil {
				hostErr = os.Symlink("guard", w)
			}
		})
	}
	defer func() { testHookCreated = nil }()
	cmd, out, listener := startChildRun(t, "TestBrokerChildRelativeCreate", "CORDON_BROKER_REL_DIR="+w)
	b := Start(listener, globPolicy{filepath.Join(dir, "guard")}, Creds{})
	werr := cmd.Wait()
	b.Stop()
	if werr != nil || hostErr != nil {
		t.Fatalf("the child: %v, the host's rename: %v\n%s", werr, hostErr, out.String())
	}
	if !strings.Contains(out.String(), "create errno 0\n") {
		t.Errorf("the relative create failed, where the kernel's succeeds:\n%s", out.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, "w2", "1")); err != nil {
		t.Errorf("the file is not in the renamed directory, where the kernel puts it: %v", err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "guard")); err != nil || len(ents) != 0 {
		t.Errorf("the protected directory: %v %v", ents, err)
	}
	if d := b.Denials(); len(d) != 0 {
		t.Errorf("refused: %+v", d)
	}
}

// TestBrokerChildRelativeCreate is not a test: it is the process
// TestBrokerCreateCwdMovedAfterCreate starts. It changes to
// CORDON_BROKER_REL_DIR, installs the filter, sends the listener over
// descriptor 3 and creates "1" there, printing the errno.
func TestBrokerChildRelativeCreate(t *testing.T) {
	dir := os.Getenv("CORDON_BROKER_REL_DIR")
	if dir == "" {
		t.Skip("the child of TestBrokerCreateCwdMovedAfterCreate")
	}
	runtime.LockOSThread()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	sendCreatesListener(t)
	fd, err := unix.Openat(unix.AT_FDCWD, "1", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	errno, _ := err.(unix.Errno)
	fmt.Printf("create errno %d\n", int(errno))
	if err == nil {
		unix.Close(fd)
	}
}

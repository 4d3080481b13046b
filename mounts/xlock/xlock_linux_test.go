package xlock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdLock starts flock(1), as the user setpriv names (none: the test's),
// holding dir's lock until its stdin closes, and returns once it holds it.
func holdLock(t *testing.T, dir string, setpriv ...string) (release func()) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	args := append(setpriv, "flock", "-x", dir, "sh", "-c", "echo held; exec cat")
	cmd := exec.Command(args[0], args[1:]...)
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
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		in.Close()
		_ = cmd.Wait()
		t.Fatalf("%v: %q %v", args, line, err)
	}
	return func() {
		in.Close()
		_ = cmd.Wait()
	}
}

func openPath(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestLockAgainstAnotherProcess: while another process holds the
// directory's lock, Lock (through an O_PATH descriptor, as the broker
// holds its directories) fails with ErrBusy instead of waiting forever;
// once that process lets go, Lock takes it, and its release lets the
// other process take it again.
func TestLockAgainstAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	fd := openPath(t, dir)
	release := holdLock(t, dir)
	if unlock, err := lockWithin(fd, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		if unlock != nil {
			unlock()
		}
		release()
		t.Fatalf("Lock while another process holds it: %v, want ErrBusy", err)
	}
	release()
	unlock, err := Lock(fd)
	if err != nil {
		t.Fatalf("Lock after the other process let go: %v", err)
	}
	if err := exec.Command("flock", "-xn", dir, "true").Run(); err == nil {
		t.Fatalf("another process took the lock Lock holds")
	}
	unlock()
	if err := exec.Command("flock", "-xn", dir, "true").Run(); err != nil {
		t.Fatalf("another process cannot take the lock after its release: %v", err)
	}
}

// TestLockAcrossUsers: a lock held by another user (uid 4242, as a
// rootless sandbox's broker runs) on a directory both can read excludes
// root's Lock, and the reverse.
func TestLockAcrossUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(t.TempDir()+"/..", 0o755); err != nil {
		t.Fatal(err)
	}
	fd := openPath(t, dir)
	as4242 := []string{"setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"}
	release := holdLock(t, dir, as4242...)
	if unlock, err := lockWithin(fd, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		if unlock != nil {
			unlock()
		}
		release()
		t.Fatalf("root's Lock while uid 4242 holds it: %v, want ErrBusy", err)
	}
	release()
	unlock, err := Lock(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cmd := exec.Command(as4242[0], append(as4242[1:], "flock", "-xn", dir, "true")...)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("uid 4242 took the lock root holds: %s", out)
	}
}

// TestLockUnreadableFailsClosed: a directory the caller cannot open for
// reading is an error, never an unlocked success.
func TestLockUnreadableFailsClosed(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	dir := t.TempDir() + "/wx"
	if err := os.Mkdir(dir, 0o300); err != nil {
		t.Fatal(err)
	}
	if unlock, err := Lock(openPath(t, dir)); err == nil {
		unlock()
		t.Fatalf("Lock of an unreadable directory succeeded")
	}
}

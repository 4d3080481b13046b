//go:build unix

package runner

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitOf reads how a waited-for process ended, from its state or from the
// *exec.ExitError that carries it: the exit status, or 128+n and the
// signal's name ("SIGKILL") after signal n. ok is false when neither is
// known (the wait itself failed).
func ExitOf(ps *os.ProcessState, err error) (code int, signal string, ok bool) {
	ws, ok := waitStatus(ps, err)
	if !ok || (!ws.Signaled() && !ws.Exited()) {
		return 0, "", false
	}
	code, signal = ExitOfWaitStatus(unix.WaitStatus(ws))
	return code, signal, true
}

// ExitOfWaitStatus is the exit code of a wait status (128+n after signal n,
// as shells report it) and the signal's name ("SIGSEGV"), or "".
func ExitOfWaitStatus(ws unix.WaitStatus) (code int, signal string) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

func waitStatus(ps *os.ProcessState, err error) (syscall.WaitStatus, bool) {
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			return ws, true
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws, true
		}
	}
	return 0, false
}

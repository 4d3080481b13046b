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
	switch {
	case !ok:
		return 0, "", false
	case ws.Signaled():
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal()), true
	case ws.Exited():
		return ws.ExitStatus(), "", true
	}
	return 0, "", false
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

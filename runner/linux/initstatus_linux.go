package linux

import (
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// commandExit is the exit code and signal of the command: from the wait
// status cordon's PID 1 reported on its status pipe ("exited WSTATUS") when
// it agrees with PID 1's own exit code, and from PID 1's wait status
// otherwise (PID 1 was killed: a timeout, a cancel, cordon's own kill). The
// exit status alone cannot tell a command killed by SIGSEGV from one that
// ran `exit 139`; the record can, and the command cannot write it.
func commandExit(initCode int, initSignal string, st runner.InitStatus) (int, string) {
	if !st.Exited || initSignal != "" {
		return initCode, initSignal
	}
	ws := unix.WaitStatus(st.WaitStatus)
	if !ws.Exited() && !ws.Signaled() {
		return initCode, initSignal
	}
	code, sig := runner.ExitOfWaitStatus(ws)
	if code != initCode {
		return initCode, initSignal
	}
	return code, sig
}

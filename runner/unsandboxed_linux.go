package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/spec"
)

// runUnsandboxed runs the command with application-level checks only: no
// namespaces, no mount boundary. It is used only when the kernel cannot
// build a sandbox and the config says require_os_sandbox: false, and it says
// so loudly. The timeout still kills the whole process group.
func runUnsandboxed(ctx context.Context, req Request, res *Result, p Policy) {
	sb := req.Sandbox
	const warning = "cordon: WARNING: the OS sandbox is unavailable (no user namespaces); running with application-level checks only: " +
		"filesystem, network and process isolation are NOT enforced (require_os_sandbox: false)\n"
	fmt.Fprint(stderrOf(req), warning)
	res.Backend = "none"
	res.Unenforced = append(res.Unenforced, "filesystem boundary", "network", "pid isolation", "memory, pids and cpu limits")

	cmd := exec.Command(req.Args[0], req.Args[1:]...)
	cmd.Dir = req.Dir
	if cmd.Dir == "" {
		cmd.Dir = sb.Root
	}
	cmd.Env = spec.ProcessEnv(sb)
	cmd.Stdin = req.Stdin
	stdout := NewCappedWriter(req.Stdout, sb.Limits.Output)
	tail := NewTailBuffer(stderrTail)
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(NewCappedWriter(req.Stderr, sb.Limits.Output), tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		switch {
		case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
			res.ExitCode, res.FailureType = ExitNotFound, FailureProcessError
		default:
			res.ExitCode, res.FailureType = ExitNotRunnable, FailureProcessError
		}
		res.FailureDetail = err.Error()
		return
	}
	if sb.Limits.FileSize > 0 {
		lim := &unix.Rlimit{Cur: uint64(sb.Limits.FileSize), Max: uint64(sb.Limits.FileSize)}
		_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, lim, nil)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeoutC <-chan time.Time
	if t := req.EffectiveTimeout(); t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeoutC = timer.C
	}
	timedOut := false
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-timeoutC:
			timedOut = true
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		case <-ctx.Done():
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		case sig := <-req.Signals:
			if s, ok := sig.(unix.Signal); ok && s != unix.SIGWINCH {
				_ = unix.Kill(-cmd.Process.Pid, s)
			}
		}
	}
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	ws, _ := waitStatus(waitResult{cmd.ProcessState, err})
	if ws.Signaled() {
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = unix.SignalName(ws.Signal())
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	switch {
	case timedOut:
		res.ExitCode, res.FailureType = ExitTimeout, FailureTimeout
		res.FailureDetail = fmt.Sprintf("the command ran longer than the timeout of %s and was killed", req.EffectiveTimeout())
	case res.ExitCode == 0:
	default:
		classifyExit(res, p, sb, cmd.Dir, tail.String())
	}
}

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
func runUnsandboxed(ctx context.Context, req Request, res Result, p Policy) Result {
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
	tail := NewTailBuffer(StderrTail)
	cmd.Stdout = stdout
	stderr := NewCappedWriter(req.Stderr, sb.Limits.Output)
	cmd.Stderr = io.MultiWriter(stderr, tail)
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
		return res
	}
	if sb.Limits.FileSize > 0 {
		lim := &unix.Rlimit{Cur: uint64(sb.Limits.FileSize), Max: uint64(sb.Limits.FileSize)}
		_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_FSIZE, lim, nil)
	}
	pgid := -cmd.Process.Pid
	done := make(chan struct{})
	var werr error
	go func() {
		werr = cmd.Wait()
		close(done)
	}()
	end := Supervise(ctx, req, Supervised{
		Done:   done,
		Signal: func(s syscall.Signal) { _ = unix.Kill(pgid, s) },
		Kill:   func() { _ = unix.Kill(pgid, unix.SIGKILL) },
	})
	_ = unix.Kill(pgid, unix.SIGKILL)
	o := Outcome{TimedOut: end.TimedOut, Canceled: end.Canceled, Interrupted: end.Interrupted, Timeout: req.EffectiveTimeout(), Stderr: tail.String(), Cwd: cmd.Dir}
	o.ExitCode, o.Signal, _ = ExitOf(cmd.ProcessState, werr)
	o.FileSizeLimit = sb.Limits.FileSize
	cut := ReportTruncation(req.Stderr, stdout, stderr)
	res = Classify(res, o, PolicyDenials(p, sb))
	res.OutputTruncated = cut
	return res
}

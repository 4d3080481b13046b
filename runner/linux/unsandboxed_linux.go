package linux

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

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// runUnsandboxed runs the command with application-level checks only: no
// namespaces, no mount boundary. It is used only when the kernel cannot
// build a sandbox and the config says require_os_sandbox: false, and it says
// so loudly. The timeout still kills the whole process group.
func runUnsandboxed(ctx context.Context, req runner.Request, res runner.Result, p runner.Policy) runner.Result {
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
	stdout := runner.NewCappedWriter(req.Stdout, sb.Limits.Output)
	tail := runner.NewTailBuffer(runner.StderrTail)
	cmd.Stdout = stdout
	stderr := runner.NewCappedWriter(req.Stderr, sb.Limits.Output)
	cmd.Stderr = io.MultiWriter(stderr, tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		switch {
		case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
			res.ExitCode, res.FailureType = runner.ExitNotFound, runner.FailureProcessError
		default:
			res.ExitCode, res.FailureType = runner.ExitNotRunnable, runner.FailureProcessError
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
	end := runner.Supervise(ctx, req, runner.Supervised{
		Done:   done,
		Signal: func(s syscall.Signal) { _ = unix.Kill(pgid, s) },
		Kill:   func() { _ = unix.Kill(pgid, unix.SIGKILL) },
	})
	_ = unix.Kill(pgid, unix.SIGKILL)
	o := runner.Outcome{TimedOut: end.TimedOut, Canceled: end.Canceled, Interrupted: end.Interrupted, Timeout: req.EffectiveTimeout(), Stderr: tail.String(), Cwd: cmd.Dir}
	o.ExitCode, o.Signal, _ = runner.ExitOf(cmd.ProcessState, werr)
	o.FileSizeLimit = sb.Limits.FileSize
	cut := runner.ReportTruncation(req.Stderr, stdout, stderr)
	res = runner.Classify(res, o, runner.PolicyDenials(p, sb))
	res.OutputTruncated = cut
	return res
}

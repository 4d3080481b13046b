package linux

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/session"
)

// start starts the sandbox's init, runs the started steps, then lets the
// init execute the command. It returns false and the result when the
// command could not be started.
func (run *linuxRun) start() (runner.Result, bool) {
	c := run.container
	err := c.Start(run.lp)
	// The init holds its own end now: cordon's must go, so that the
	// init sees EOF exactly when cordon dies.
	run.liveR.Close()
	run.statusW.Close()
	run.brk.theirs.Close()
	if err != nil {
		run.io.abort()
		return classifyStartError(run.res, err), false
	}
	run.ph.mark("init")
	for _, s := range startedSteps {
		if err := s.run(run); err != nil {
			run.io.abort()
			run.stop()
			return run.setupFailed(fmt.Errorf("%s: %w", s.name, err)), false
		}
		run.ph.mark(s.name)
	}
	if err := c.Exec(); err != nil {
		run.io.abort()
		run.stop()
		return classifyStartError(run.res, err), false
	}
	if err := run.io.started(run.req); err != nil {
		run.stop()
		return run.setupFailed(fmt.Errorf("console: %w", err)), false
	}
	return runner.Result{}, true
}

// stop kills a sandbox that was started but will not be supervised, and
// reaps its init.
func (run *linuxRun) stop() {
	killAll(run.container)
	_, _ = run.lp.Wait()
}

// supervise waits for the command under the shared supervision loop and
// gathers what classification needs.
func (run *linuxRun) supervise(ctx context.Context) runner.Outcome {
	done := make(chan struct{})
	var ps *os.ProcessState
	var werr error
	go func() {
		ps, werr = run.lp.Wait()
		close(done)
	}()
	end := runner.Supervise(ctx, run.req, runner.Supervised{
		Done:   done,
		Signal: func(s syscall.Signal) { _ = run.container.Signal(s) },
		Kill:   func() { killAll(run.container) },
		Resize: func() { run.io.resize(run.req) },
		Keys:   run.io.keys,
	})
	// Every process of the sandbox is gone once its init is (PID
	// namespace), so the copiers reach EOF.
	run.ph.mark("wait")
	run.io.drain()
	o := runner.Outcome{
		TimedOut:      end.TimedOut,
		Canceled:      end.Canceled,
		Interrupted:   end.Interrupted,
		Timeout:       run.req.EffectiveTimeout(),
		OOM:           oomKilled(run.container) || run.events.OOMKilled(),
		MemoryLimit:   run.req.Sandbox.Limits.Memory,
		PidsLimited:   run.eff.Limits.Pids > 0 && (pidsLimited(run.container) || run.events.PidsLimited()),
		PidsLimit:     run.eff.Limits.Pids,
		FileSizeLimit: run.eff.Limits.FileSize,
		Stderr:        run.tail.String(),
		Cwd:           run.cwd,
	}
	if code, sig, ok := runner.ExitOf(ps, werr); ok {
		st := runner.ParseInitStatus(readStatus(run.statusR))
		o.Init = &st
		o.ExitCode, o.Signal = commandExit(code, sig, st)
	} else if werr != nil {
		o.SetupErr = fmt.Errorf("wait: %w", werr)
	}
	return o
}

// finish tells the caller what limits.output cut and classifies the
// outcome.
func (run *linuxRun) finish(o runner.Outcome) runner.Result {
	var notes io.Writer
	if o.SetupErr == nil {
		notes = run.req.Stderr
	}
	cut := runner.ReportTruncation(notes, run.stdout, run.stderr)
	if run.guard != nil {
		// The sandbox is gone: every connection ends now and records
		// its event.
		run.guard.Close()
		run.ph.mark("network_close")
	}
	refused := run.brk.stop()
	res := runner.Classify(run.res, o, runner.InitMessages, runner.NetworkDenials(run.guardDenials()), brokerDenials(refused), runner.PolicyDenials(run.table, run.eff))
	res.Denials, res.DenialCount = runner.ListDenials(session.DeniedCalls(refused))
	res = runner.HostCommandHint(res, o, run.req.Args, run.table)
	res.OutputTruncated = cut
	res.Network = run.guardEvents()
	return res
}

// readStatus returns what the sandbox's init wrote on its status pipe. The
// init has exited, so every record is in the pipe; the read never waits (a
// process that still held the write end could not make cordon hang).
func readStatus(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var out []byte
	buf := make([]byte, 4096)
	_ = rc.Read(func(fd uintptr) bool {
		for len(out) < 64<<10 {
			n, err := unix.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break
			}
			out = append(out, buf[:n]...)
		}
		return true
	})
	return string(out)
}

// classifyStartError types a failure to start the command: it could not be
// found or executed (127, 126), or the sandbox could not be built.
func classifyStartError(res runner.Result, err error) runner.Result {
	msg := err.Error()
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "executable file not found"), strings.Contains(lower, "exec:") && strings.Contains(lower, "no such file or directory"):
		res.ExitCode = runner.ExitNotFound
		res.FailureType = runner.FailureProcessError
		res.FailureDetail = "command not found in the sandbox: " + msg
	case strings.Contains(lower, "exec") && (strings.Contains(lower, "permission denied") || strings.Contains(lower, "exec format error")):
		res.ExitCode = runner.ExitNotRunnable
		res.FailureType = runner.FailureProcessError
		res.FailureDetail = "command cannot be executed in the sandbox: " + msg
	default:
		res = runner.SetupFailure(res, fmt.Errorf("start: %w", err))
	}
	return res
}

// killAll kills the sandbox's init; the kernel then kills every other
// process of its PID namespace, daemonized or re-parented ones included.
func killAll(c *libcontainer.Container) {
	if err := c.Signal(unix.SIGKILL); err != nil {
		logrus.WithError(err).Debug("kill sandbox init")
	}
}

// oomKilled reports whether the memory cgroup killed a process of c.
func oomKilled(c *libcontainer.Container) bool {
	if cgroups.IsCgroup2UnifiedMode() {
		return cgroup.Counter(cgroup.File(c, "", "memory.events"), "oom_kill") > 0
	}
	return cgroup.Counter(cgroup.File(c, "memory", "memory.oom_control"), "oom_kill") > 0
}

// pidsLimited reports whether the pids controller refused a fork in c's
// cgroup: the "max" counter of pids.events, which cgroup v1 and v2 both
// keep.
func pidsLimited(c *libcontainer.Container) bool {
	return cgroup.Counter(cgroup.PidsEventsFile(c), "max") > 0
}

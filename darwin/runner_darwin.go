//go:build darwin

package darwin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
)

// scanInterval is how often a run's process table is scanned to record
// processes that might leave its session.
const scanInterval = 100 * time.Millisecond

// seatbelt is the Runner over sandbox-exec.
type seatbelt struct{}

// New returns the Seatbelt runner. It fails with ErrUnsupported when
// /usr/bin/sandbox-exec is missing.
func New() (runner.Runner, error) {
	fi, err := os.Stat(SandboxExec)
	if err != nil || fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is missing", ErrUnsupported, SandboxExec)
	}
	return seatbelt{}, nil
}

// Run runs req.Args under sandbox-exec with the profile of req.Sandbox, in
// a new session (so it has no controlling terminal unless req.TTY gives it
// a pty, and its process group can be killed whole).
func (seatbelt) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	start := time.Now()
	if req.Sandbox == nil {
		return runner.Result{}, fmt.Errorf("%w: no sandbox", ErrBadRequest)
	}
	if len(req.Args) == 0 {
		return runner.Result{}, fmt.Errorf("%w: no command", ErrBadRequest)
	}
	sb := req.Sandbox
	enf := runner.Enforce(runner.BackendSeatbelt, sb, runner.HostFacts{})
	degraded := enf.UnenforcedDetails()
	fail := func(err error) (runner.Result, error) {
		return runner.SetupFailure(newResult(sb, degraded, time.Since(start)), err), nil
	}
	if err := enf.Err(); err != nil {
		return fail(err)
	}
	for _, d := range degraded {
		if req.Stderr != nil {
			fmt.Fprintf(req.Stderr, "cordon: WARNING: not enforced: %s\n", d)
		}
	}

	tmpHost, err := os.MkdirTemp("", "cordon-")
	if err != nil {
		return fail(fmt.Errorf("private temporary directory: %w", err))
	}
	defer os.RemoveAll(tmpHost)
	tmp := Canonicalize(tmpHost)
	runSb := withTempDir(enf.Sandbox, tmp)
	tag := NewTag()
	opts := ProfileOptions{Tag: tag}
	var netLog netEvents
	proxy, err := startProxy(runSb, &netLog)
	if err != nil {
		return fail(err)
	}
	var proxyEnv []string
	if proxy != nil {
		defer proxy.Close()
		proxyEnv = useProxy(&opts, proxy)
	}
	profile, err := Profile(runSb, opts)
	if err != nil {
		return fail(err)
	}
	argv, err := commandLine(profile, req.Args, sb.Limits.FileSize)
	if err != nil {
		return fail(err)
	}
	table, err := mounts.NewLinked(runSb, req.Links)
	if err != nil {
		return fail(err)
	}
	// Sources are used by path: refuse one the sandbox could have
	// redirected through a planted symlink.
	if err := table.CheckSources(); err != nil {
		return fail(err)
	}
	cwd := workDir(req, tmp)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = processEnv(sb, tmp, os.LookupEnv, proxyEnv...)
	cmd.Dir = cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 2 * time.Second
	outCap := runner.NewCappedWriter(req.Stdout, sb.Limits.Output)
	errCap := runner.NewCappedWriter(req.Stderr, sb.Limits.Output)
	tail := runner.NewTailBuffer(runner.StderrTail)
	var term *ptyPair
	if req.TTY {
		if term, err = openPTY(); err != nil {
			return fail(err)
		}
		defer term.close()
		term.resize(req.TermSize)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.slave, term.slave, term.slave
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	} else {
		cmd.Stdin = req.Stdin
		cmd.Stdout = outCap
		cmd.Stderr = io.MultiWriter(errCap, tail)
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start %s: %w", argv[0], err))
	}
	if term != nil {
		term.slave.Close()
		term.copy(req.TypeAhead, req.Stdin, io.MultiWriter(outCap, tail))
	}
	end, waitErr := supervise(ctx, req, cmd, term)
	timedOut, canceled := end.TimedOut, end.Canceled
	o := outcome{Cwd: cwd, TimedOut: timedOut, Canceled: canceled, Interrupted: end.Interrupted, Stderr: tail.String(), Duration: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
	case errors.Is(waitErr, exec.ErrWaitDelay):
	default:
		o.StartErr = fmt.Errorf("wait: %w", waitErr)
	}
	if ps := cmd.ProcessState; ps != nil {
		o.ExitCode, o.Signal, _ = runner.ExitOf(ps, nil)
	}
	if proxy != nil {
		// Every connection is recorded when the proxy has closed.
		proxy.Close()
		o.NetDenials, o.NetDenialCount = proxy.Denials(), proxy.DenialCount()
	}
	if o.StartErr == nil && !timedOut && !canceled && o.ExitCode != 0 && o.NetDenialCount == 0 && eperm().MatchString(o.Stderr) {
		o.LogDenials = logDenials(tag, start)
	}
	res := classify(sb, degraded, table, req.EffectiveTimeout(), o)
	res.Network = netLog.all()
	res.OutputTruncated = runner.ReportTruncation(req.Stderr, outCap, errCap)
	return res, nil
}

// supervise runs the shared supervision loop over a started run, then
// kills whatever is left of it and reaps it.
func supervise(ctx context.Context, req runner.Request, cmd *exec.Cmd, term *ptyPair) (runner.Ended, error) {
	pid := cmd.Process.Pid
	tracker := newProcTracker(pid, pid, os.Getpid())
	exited := make(chan struct{})
	go func() {
		waitExit(pid)
		close(exited)
	}()

	var resize func()
	var keys <-chan struct{}
	if term != nil {
		resize = func() { term.resize(req.TermSize) }
		keys = term.keys
	}
	// The root is not reaped while it is supervised, so its children still
	// name it as their parent: Kill finds and kills the whole run.
	end := runner.Supervise(ctx, req, runner.Supervised{
		Done:   exited,
		Signal: func(s syscall.Signal) { _ = syscall.Kill(-pid, s) },
		Kill:   func() { killRun(tracker) },
		Resize: resize,
		Keys:   keys,
		Every:  scanInterval,
		Tick: func() {
			if procs, err := listProcs(); err == nil {
				tracker.observe(procs)
			}
		},
	})
	// Kill what is left of the run (a daemon that left the process
	// group) while the root is not reaped yet, then reap.
	killRun(tracker)
	waitErr := cmd.Wait()
	killRun(tracker)
	if term != nil {
		term.drain()
	}

	return end, waitErr
}

// killRun kills the run's process group and every process the tracker
// ties to the run, until none is left alive.
func killRun(t *procTracker) {
	for round := 0; round < 20; round++ {
		_ = syscall.Kill(-t.pgid, syscall.SIGKILL)
		procs, err := listProcs()
		if err != nil {
			return
		}
		alive := 0
		for _, p := range t.members(procs) {
			if !p.Zombie {
				alive++
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
		if alive == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logDenials fetches this run's denials from the unified log. It is only
// asked when a failed command reported "Operation not permitted" without a
// path the policy explains, and it gives up after a few seconds.
func logDenials(tag string, start time.Time) []Denial {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/log", logShowArgs(tag, start.Add(-time.Second))...).Output()
	if err != nil {
		logrus.WithError(err).Debug("seatbelt: reading the sandbox log failed")
	}
	var ours []Denial
	for _, d := range ParseDenials(string(out)) {
		if d.Tag == "" || d.Tag == tag {
			ours = append(ours, d)
		}
	}
	return ours
}

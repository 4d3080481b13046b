package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/awake"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
	"github.com/cordon-run/cordon/spec"
)

// killGrace is how long the supervisor waits for a shim to report after
// it asked it to kill its exec's tree. A shim that does not answer was
// stopped or killed from inside; the session then ends, because that is
// the only way left to be sure nothing the exec started survives.
const killGrace = 2 * time.Second

// detachedDrain is how long output is still read after a detached exec's
// command exited: its background processes may hold stdout open.
const detachedDrain = 50 * time.Millisecond

// Exec implements Session.
func (s *linuxSession) Exec(ctx context.Context, req runner.ExecRequest) (res runner.Result, err error) {
	start := time.Now()
	res = runner.Result{Backend: s.backend, FailureType: runner.FailureNone, Sandbox: &s.sum, Unenforced: s.Unenforced()}
	defer func() { res.DurationMS = time.Since(start).Milliseconds() }()
	if err := s.Err(); err != nil {
		return goneResult(&res, err), err
	}
	if len(req.Args) == 0 || req.Args[0] == "" {
		return res, fmt.Errorf("%w: a command is required", runner.ErrBadRequest)
	}
	cwd := req.Dir
	switch {
	case cwd == "":
		cwd = s.rootDir()
	case !filepath.IsAbs(cwd):
		cwd = filepath.Join(s.rootDir(), cwd)
	}
	s.life.begin()
	defer s.life.end()
	// A plain exec's hand-offs (the shim, the command's start and exit,
	// the status) run on both CPUs at once: the keeper that the broker
	// pokes for the shim's chdir would spin through the command's start.
	// waitPolled lets it go after awake.ExecQuiet.
	var quiet func()
	if !req.TTY && !req.Detach {
		quiet = awake.Quiet()
		defer quiet()
	}
	netSince := s.built.NetMark()
	x, err := s.newExec(req, cwd)
	if err != nil {
		if gerr := s.Err(); gerr != nil {
			return goneResult(&res, gerr), gerr
		}
		return runner.SetupFailure(res, err), nil
	}
	defer x.close()
	if quiet != nil {
		x.quiet, x.quietUntil = quiet, start.Add(awake.ExecQuiet)
	}
	st, timedOut, canceled, stErr := x.wait(ctx, req)
	if stErr == nil && st.Again && !x.signaled && !req.Detach && !req.TTY {
		// The shim left nothing of this exec and waits for the next.
		s.putShim(x.shim)
		x.conn = nil
	}
	if stErr != nil && s.Err() == nil {
		// The shim is gone (killed from inside): nothing tracks what the
		// command started any more, so the session ends. Unless the
		// sandbox's init is going too, and says why first (its shims
		// go with it): a moment for that reason to arrive.
		select {
		case <-s.gone:
		case <-time.After(50 * time.Millisecond):
		}
		s.kill("an exec's tracker was killed from inside the sandbox")
	}
	if stErr == nil && st.Phase == pid1.PhaseAttrs && s.Err() == nil {
		// Every command after this one would run with what an earlier
		// one left: the session ends rather than run them so.
		s.kill(attrsReason(st.Errno))
	}
	x.drain(req.Detach)
	s.finish(&res, x, req, cwd, st, stErr, timedOut, canceled)
	netSince(&res)
	if res.FailureType == runner.FailureSessionGone {
		return res, s.Err()
	}
	return res, nil
}

// attrsLowered is why a session ends when a shim or PID 1 cannot put back
// the attributes every command inherits.
const attrsLowered = "a command lowered the resource limits or priority that every command of the session inherits " +
	"(prlimit, renice, taskset or sched_setattr of PID 1 or a shim), and they cannot be raised again without privilege: " +
	"the session was stopped"

// attrsReason is why a session ends for a status of phaseAttrs with
// errno e: EMFILE or EBUSY when the shim could not find the tree to kill
// it (a process of it kept lowering the shim's limits), anything else the
// errno of a restore that needs privilege.
func attrsReason(e int32) string {
	switch unix.Errno(e) {
	case unix.EMFILE, unix.EBUSY:
		return "a process of a command kept lowering the limits of the command's tracker (prlimit on its parent), " +
			"so that the processes the command started could not be found and killed: the session was stopped, and they with it"
	}
	return fmt.Sprintf("%s (%s)", attrsLowered, unix.ErrnoName(unix.Errno(e)))
}

// goneResult types a result for an exec a gone session cannot run.
func goneResult(res *runner.Result, err error) runner.Result {
	res.ExitCode = runner.ExitSetupError
	res.FailureType = runner.FailureSessionGone
	res.FailureDetail = err.Error()
	return *res
}

// sessionExec is one running exec as the supervisor sees it.
type sessionExec struct {
	s  *linuxSession
	id uint64
	// conn is the supervisor's end of the exec's shim socket: the EXEC
	// and SIGNAL requests go out on it, the status record comes back.
	conn *os.File
	shim shimConn // conn, and the inode of the shim's end
	// signaled: a SIGNAL request went to the shim, which may read it
	// after the exec, so the shim is not used again.
	signaled bool
	stdinW   *os.File
	console  *os.File // a TTY exec's terminal master
	// keys carries each ^C typed at a TTY exec's terminal (as CopyKeys
	// reports them); interrupted: a second within KeyInterruptWindow
	// killed the exec's tree.
	keys        chan struct{}
	interrupted bool
	stopIn      func()
	outR        []*os.File
	copiers     sync.WaitGroup
	// polled: the exec's stdout and stderr pipes (blocking read ends,
	// -1 once at EOF) and where each goes, read by wait itself (polled)
	// rather than by copier goroutines: a plain exec, neither detached
	// nor on a terminal.
	polled    []int
	polledDst []io.Writer
	buf       []byte
	// quiet ends the exec's awake.Quiet, which waitPolled does at
	// quietUntil if the command still runs; nil once ended.
	quiet      func()
	quietUntil time.Time
	// mu guards signaled, finished, timedOut, canceled and grace against
	// a polled exec's timer, cancel and signal callbacks, which act on
	// their own while wait reads (armPolled).
	mu                 sync.Mutex
	finished           bool
	timedOut, canceled bool
	grace              *time.Timer
	stdout             *runner.CappedWriter
	stderr             *runner.CappedWriter
	tail               *runner.TailBuffer
	oomStart           int64
	// pidsStart is the pids.events "max" counter when the exec started.
	pidsStart int64
	// leaf is the exec's own cgroup (cgroup v2), or "".
	leaf string
	// memory is the exec's own memory limit on its leaf, or 0.
	memory int64
	// trackerIno is the inode of the shim's end of its socket, by which
	// the broker's refusals of this exec's processes are known
	// (execDenials).
	trackerIno uint64
}

// newExec sends the EXEC request with the exec's stdio and status pipe.
func (s *linuxSession) newExec(req runner.ExecRequest, cwd string) (*sessionExec, error) {
	lookup := os.LookupEnv
	if req.Env != nil {
		m := make(map[string]string, len(req.Env))
		for _, kv := range req.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		lookup = func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	env := spec.ProcessEnvFrom(s.sb, lookup)
	x := &sessionExec{s: s, id: s.nextID.Add(1), tail: runner.NewTailBuffer(runner.StderrTail)}
	x.stdout = runner.NewCappedWriter(req.Stdout, s.sb.Limits.Output)
	x.stderr = runner.NewCappedWriter(req.Stderr, s.sb.Limits.Output)
	if req.TTY {
		return s.newTTYExec(x, req, cwd, env)
	}
	var flags uint32
	if req.Detach {
		flags |= pid1.ProtoFlagDetach
	}
	leafProcs, err := s.takeLeaf(x, &flags, req.Memory)
	if err != nil {
		x.close()
		return nil, err
	}
	if leafProcs != nil {
		defer leafProcs.Close()
	}
	msg, err := pid1.EncodeExec(x.id, flags, 0, cwd, req.Args, env)
	if err != nil {
		x.close()
		return nil, err
	}
	var child []int // the sandbox's ends, closed once sent (-1: /dev/null)
	defer func() {
		for _, fd := range child {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	stdin := -1
	if req.Stdin != nil && !isDevNull(req.Stdin) {
		r, w, err := pipeToSandbox()
		if err != nil {
			x.close()
			return nil, err
		}
		stdin, x.stdinW = r, w
		child = append(child, r)
	}
	for i, dst := range []io.Writer{x.stdout, io.MultiWriter(x.stderr, x.tail)} {
		if i == 0 && req.Stdout == nil {
			// Output nobody reads: the command writes to /dev/null
			// directly, as it would have been discarded anyway.
			child = append(child, -1)
			continue
		}
		if !req.Detach {
			// Read by wait: every process that holds the write end is
			// dead once the status comes, so the read end reaches EOF.
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				x.close()
				return nil, err
			}
			child = append(child, p[1])
			x.polled, x.polledDst = append(x.polled, p[0]), append(x.polledDst, dst)
			continue
		}
		r, w, err := pipe()
		if err != nil {
			x.close()
			return nil, err
		}
		child = append(child, w)
		x.outR = append(x.outR, r)
		x.copiers.Add(1)
		go func(dst io.Writer, r *os.File) {
			defer x.copiers.Done()
			_, _ = io.Copy(dst, r)
		}(dst, r)
	}
	if s.oomFile != "" {
		x.oomStart = cgroup.Counter(s.oomFile, "oom_kill")
	}
	x.pidsStart = cgroup.Counter(s.pidsFile, "max")
	fds := append([]int{s.devNullFD}, child...)
	if stdin >= 0 {
		fds = append([]int(nil), child...)
	}
	for i, fd := range fds {
		if fd < 0 {
			fds[i] = s.devNullFD
		}
	}
	fds = s.leafFDs(fds, leafProcs)
	if err := s.sendExec(x, msg, fds); err != nil {
		x.close()
		return nil, err
	}
	if x.stdinW != nil {
		x.stopIn = copyStdin(x.stdinW, req.Stdin, true)
	}
	return x, nil
}

// wait waits for the shim's status, enforcing the timeout and forwarding
// signals. It returns the status or why there is none.
func (x *sessionExec) wait(ctx context.Context, req runner.ExecRequest) (st pid1.ExecStatus, timedOut, canceled bool, stErr error) {
	readStatus := func() {
		b := make([]byte, pid1.ProtoStatusSize+1)
		n, err := io.ReadAtLeast(x.conn, b, pid1.ProtoStatusSize)
		if err != nil {
			stErr = fmt.Errorf("the exec's tracker in the sandbox ended without a status (killed from inside?): %w", err)
			return
		}
		st, stErr = pid1.DecodeStatus(b[:n])
	}
	if x.polled != nil {
		return x.waitPolled(ctx, req)
	}
	if ctx.Done() == nil && req.Signals == nil && x.keys == nil && x.timeout(req) <= 0 {
		// Nothing to enforce while it runs: read the status here. The
		// pipe reaches EOF if the sandbox dies, so this cannot hang on a
		// gone session.
		readStatus()
		return st, false, false, stErr
	}
	statusC := make(chan struct{})
	go func() {
		defer close(statusC)
		readStatus()
	}()
	var timeoutC, graceC <-chan time.Time
	if t := x.timeout(req); t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeoutC = timer.C
	}
	killTree := func() {
		x.signaled = true
		_ = sendOn(x.conn, pid1.EncodeSignal(x.id, pid1.ProtoSigKillTree), nil)
		if graceC == nil {
			graceC = time.After(killGrace)
		}
	}
	ctxDone := ctx.Done()
	var lastKey time.Time
	for {
		select {
		case <-statusC:
			return st, timedOut, canceled, stErr
		case <-x.keys:
			// As at a TTY run (Supervise): the terminal gave the first
			// ^C to the command; a second soon after kills its tree.
			now := time.Now()
			if !lastKey.IsZero() && now.Sub(lastKey) <= runner.KeyInterruptWindow && !x.interrupted {
				x.interrupted, canceled = true, true
				killTree()
			}
			lastKey = now
		case <-timeoutC:
			timedOut, timeoutC = true, nil
			killTree()
		case <-ctxDone:
			canceled, ctxDone = true, nil
			killTree()
		case sig, ok := <-req.Signals:
			if !ok {
				req.Signals = nil
				continue
			}
			if sig == int(unix.SIGWINCH) && x.console != nil {
				x.resize(req)
				continue
			}
			x.signaled = true
			_ = sendOn(x.conn, pid1.EncodeSignal(x.id, int32(sig)), nil)
		case <-graceC:
			x.s.kill(fmt.Sprintf("exec %d did not stop within %s of being killed", x.id, killGrace))
			<-statusC
			return st, timedOut, canceled, stErr
		case <-x.s.gone:
			<-statusC // the PID namespace is gone, so is the shim
			return st, timedOut, canceled, stErr
		}
	}
}

func (x *sessionExec) timeout(req runner.ExecRequest) time.Duration {
	t := x.s.sb.Limits.Timeout
	if req.Timeout > 0 && (t == 0 || req.Timeout < t) {
		t = req.Timeout
	}
	return t
}

// drain waits for the output copiers. Without Detach every process that
// could hold the pipes is dead, so they reach EOF; a detached exec's
// background processes may keep them open, so reading stops shortly after
// the command exited.
func (x *sessionExec) drain(detach bool) {
	if x.stopIn != nil {
		x.stopIn()
	}
	x.drainPolled()
	if x.console != nil {
		// The master reads EIO once every holder of the terminal is
		// gone; a detached process may hold it longer.
		waitCopiers(&x.copiers, consoleDrain)
		x.console.Close()
	}
	if detach {
		done := make(chan struct{})
		go func() { x.copiers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(detachedDrain):
		}
		for _, r := range x.outR {
			r.Close()
		}
	}
	x.copiers.Wait()
}

func (x *sessionExec) close() {
	x.s.denials.take(x.trackerIno)
	removeLeaf(x.leaf)
	x.leaf = ""

	if x.conn != nil {
		x.conn.Close()
	}
	if x.stdinW != nil && x.stopIn == nil {
		x.stdinW.Close()
	}
	for _, r := range x.outR {
		r.Close()
	}
	for i, fd := range x.polled {
		if fd >= 0 {
			unix.Close(fd)
			x.polled[i] = -1
		}
	}
	if x.console != nil {
		x.console.Close()
	}
}

// finish types the exec's outcome from the supervisor's own state (timer,
// cancel, session) and the checked status record.
func (s *linuxSession) finish(res *runner.Result, x *sessionExec, req runner.ExecRequest, cwd string, st pid1.ExecStatus, stErr error, timedOut, canceled bool) {
	defer func(cut bool) { res.OutputTruncated = cut }(runner.ReportTruncation(req.Stderr, x.stdout, x.stderr))
	ws := unix.WaitStatus(st.Wstatus)
	if stErr == nil && st.Phase == pid1.PhaseRan {
		switch {
		case ws.Exited():
			res.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			res.ExitCode = 128 + int(ws.Signal())
			res.Signal = unix.SignalName(ws.Signal())
		}
	}
	oom := s.oomFile != "" && cgroup.Counter(s.oomFile, "oom_kill") > x.oomStart
	if x.leaf != "" {
		oom = leafOOMKills(x.leaf) > 0
	}
	refused := s.denials.take(x.trackerIno)
	res.Denials, res.DenialCount = runner.ListDenials(DeniedCalls(refused))
	switch {
	case stErr == nil && st.Phase == pid1.PhaseAttrs:
		goneResult(res, s.Err())
	case stErr != nil:
		// First, even after a timeout: the session is over, not going on.
		if timedOut {
			stErr = fmt.Errorf("after the timeout of %s: %w", x.timeout(req), stErr)
		}
		goneResult(res, fmt.Errorf("%w (%v)", s.Err(), stErr))
	case timedOut:
		res.ExitCode = runner.ExitTimeout
		res.FailureType = runner.FailureTimeout
		res.FailureDetail = fmt.Sprintf("the command ran longer than the timeout of %s; it and every process it started were killed (the session goes on)", x.timeout(req))
	case canceled && x.interrupted:
		res.FailureType = runner.FailureProcessError
		res.FailureDetail = fmt.Sprintf("^C was typed twice within %s at the exec's terminal; the command and every process it started were killed (the session goes on)", runner.KeyInterruptWindow)
	case canceled:
		res.FailureType = runner.FailureProcessError
		res.FailureDetail = "the exec was canceled; the command and every process it started were killed"
	case st.Phase == pid1.PhaseShim:
		*res = runner.SetupFailure(*res, s.noFork(st.Errno))
	case st.Phase == pid1.PhaseChdir:
		if err := s.table.Check(cwd, false); err != nil && !syntheticDir(cwd) {
			res.ExitCode = runner.ExitSetupError
			res.FailureType = runner.FailureSandboxDenied
			res.BlockedPath = cwd
			res.FailureDetail = fmt.Sprintf("working directory: %v", err)
			return
		}
		*res = runner.SetupFailure(*res, fmt.Errorf("%w: cannot change to directory %s: %s", runner.ErrSetup, cwd, unix.Errno(st.Errno)))
	case st.Phase == pid1.PhaseExec && unix.Errno(st.Errno) == unix.EAGAIN && s.eff.Limits.Pids > 0:
		res.ExitCode = runner.ExitNotRunnable
		res.FailureType = runner.FailurePidsLimit
		res.FailureDetail = fmt.Sprintf("the command could not be started: the session's processes reach its pids limit of %d (limits.pids); the session goes on, retry when some have ended", s.eff.Limits.Pids)
	case st.Phase == pid1.PhaseExec:
		res.ExitCode = runner.ExitNotRunnable
		what := "command cannot be executed in the sandbox"
		if unix.Errno(st.Errno) == unix.ENOENT {
			res.ExitCode = runner.ExitNotFound
			what = "command not found in the sandbox"
		}
		res.FailureType = runner.FailureProcessError
		res.FailureDetail = fmt.Sprintf("%s: %s: %s", what, req.Args[0], unix.Errno(st.Errno))
		*res = runner.HostCommandHint(*res, runner.Outcome{ExitCode: res.ExitCode, Init: &runner.InitStatus{Started: true, ExecCode: res.ExitCode}}, req.Args, s.table)
	case oom:
		res.FailureType = runner.FailureOOM
		res.FailureDetail = fmt.Sprintf("the memory limit of %s (shared by the whole session) killed a process while this command ran", spec.FormatBytes(s.sb.Limits.Memory))
		if x.leaf != "" {
			res.FailureDetail = fmt.Sprintf("the session's memory limit of %s (shared by its commands, each accounted in its own cgroup) killed a process of this command", spec.FormatBytes(s.sb.Limits.Memory))
		}
		if x.memory > 0 {
			res.FailureDetail = fmt.Sprintf("this command's memory limit of %s (--memory; the session's is %s) or the session's killed a process of it", spec.FormatBytes(x.memory), spec.FormatBytes(s.sb.Limits.Memory))
		}
	case res.ExitCode == 0:
		res.FailureType = runner.FailureNone
	default:
		*res = runner.Classify(*res, runner.Outcome{ExitCode: res.ExitCode, Signal: res.Signal, Stderr: x.tail.String(), Cwd: cwd,
			PidsLimited: s.pidsFile != "" && cgroup.Counter(s.pidsFile, "max") > x.pidsStart, PidsLimit: s.eff.Limits.Pids,
			FileSizeLimit: s.eff.Limits.FileSize},
			execDenialsExplainer(refused, s.table, s.built.ExplainBroker), readDenials(s.table, s.eff))
		*res = runner.HostCommandHint(*res, runner.Outcome{ExitCode: res.ExitCode, Stderr: x.tail.String()}, req.Args, s.table)
	}
}

// syntheticDir reports whether p lies in a directory the sandbox makes up
// (its private /tmp, /proc, /dev), which the mount table calls outside.
func syntheticDir(p string) bool {
	for _, d := range []string{"/tmp", "/proc", "/dev"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	// The devices controller must be registered for the device rules the
	// spec carries; without it the cgroup manager refuses them.
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// stderrTail is how much of stderr is kept for denial classification.
const stderrTail = 64 << 10

// linuxRunner runs commands through runc's libcontainer.
type linuxRunner struct {
	state    *stateDir
	rootless bool
}

// New returns the libcontainer backend. As root it uses cgroups for limits;
// as any other user it runs rootless in a user namespace that maps the
// caller's uid and gid.
func New(opts Options) (Runner, error) {
	dir := opts.StateDir
	if dir == "" {
		dir = defaultStateDir()
	}
	st, err := openStateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return &linuxRunner{state: st, rootless: os.Geteuid() != 0}, nil
}

// Run implements Runner.
func (r *linuxRunner) Run(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	if req.Sandbox == nil || len(req.Args) == 0 || req.Args[0] == "" {
		return Result{}, fmt.Errorf("%w: a sandbox and a command are required", ErrBadRequest)
	}
	sum := spec.Summarize(req.Sandbox)
	res := Result{Backend: "libcontainer", FailureType: FailureNone, Sandbox: &sum}
	if r.rootless {
		res.Backend = "libcontainer-rootless"
	}
	r.run(ctx, req, &res)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}

// setupFailed fills res for a sandbox that could not be set up.
func setupFailed(res *Result, err error) {
	res.ExitCode = ExitSetupError
	res.FailureType = FailureSetupError
	res.FailureDetail = err.Error()
}

// plan decides what of sb this host enforces. It returns the sandbox to
// build (narrowed where degradation drops a feature: never widened), the
// parts not enforced, and an error when something cannot be enforced and
// the sandbox requires OS enforcement.
func (r *linuxRunner) plan(sb *spec.Sandbox) (*spec.Sandbox, []string, error) {
	eff := *sb
	var missing []string
	if sb.Network.Enabled && len(sb.Network.Allow) > 0 {
		missing = append(missing, "network allow list ("+strings.Join(sb.Network.Allow, ", ")+
			"): cordon has no egress proxy yet, so the network stays off")
		eff.Network = spec.Network{}
	}
	if r.rootless {
		var lim []string
		if sb.Limits.Memory > 0 {
			lim = append(lim, "memory")
		}
		if sb.Limits.Pids > 0 {
			lim = append(lim, "pids")
		}
		if sb.Limits.CPUs > 0 {
			lim = append(lim, "cpus")
		}
		if len(lim) > 0 {
			missing = append(missing, "limits "+strings.Join(lim, ", ")+
				": rootless runs have no cgroup to enforce them (run as root)")
			eff.Limits.Memory, eff.Limits.Pids, eff.Limits.CPUs = 0, 0, 0
		}
	}
	if len(missing) > 0 && sb.RequireOSSandbox {
		return nil, missing, fmt.Errorf("%w: %s; set require_os_sandbox: false to run without them (cordon then reports what was not enforced)",
			ErrUnenforceable, strings.Join(missing, "; "))
	}
	return &eff, missing, nil
}

func (r *linuxRunner) run(ctx context.Context, req Request, res *Result) {
	sb := req.Sandbox
	ph := newPhases()
	defer ph.log()
	if !r.rootless {
		prewarmCgroupLock()
	}
	table, err := mounts.New(sb)
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: mount table: %w", ErrSetup, err))
		return
	}
	if r.rootless && !userNamespacesAvailable() {
		if sb.RequireOSSandbox {
			setupFailed(res, fmt.Errorf("%w: user namespaces are disabled on this host, so a rootless sandbox cannot be built; "+
				"run as root, enable them (sysctl user.max_user_namespaces), or set require_os_sandbox: false to run with application-level checks only",
				ErrUnenforceable))
			return
		}
		runUnsandboxed(ctx, req, res, table)
		return
	}
	if err := table.CheckSources(); err != nil {
		setupFailed(res, fmt.Errorf("%w: %w", ErrSetup, err))
		return
	}
	if err := r.checkStateHidden(sb); err != nil {
		setupFailed(res, err)
		return
	}
	eff, missing, err := r.plan(sb)
	res.Unenforced = missing
	if err != nil {
		setupFailed(res, err)
		return
	}
	for _, m := range missing {
		fmt.Fprintf(stderrOf(req), "cordon: WARNING: not enforced: %s\n", m)
	}

	ph.mark("preflight")
	r.state.reapStale()
	if !r.rootless {
		r.state.sweepOrphanCgroups()
	}
	id := req.ID
	if id == "" {
		id = newRunID()
	}
	unlock, err := r.state.begin(id)
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: %w", ErrSetup, err))
		return
	}
	defer func() {
		ph.mark("run")
		defer ph.mark("cleanup")
		if err := r.state.cleanup(id); err != nil {
			logrus.WithField("run", id).WithError(err).Warn("cleanup after run")
			fmt.Fprintf(stderrOf(req), "cordon: warning: cleanup of run %s was incomplete: %v\n", id, err)
		}
		unlock()
	}()

	ph.mark("state")
	created, err := r.state.acquirePlaceholders(id, spec.GuardedPaths(eff), func() ([]string, error) {
		return makePlaceholders(spec.PlaceholderDirs(eff))
	})
	// Record before anything else can fail, so a crash cannot strand them.
	if rerr := r.state.writeRecord(runRecord{ID: id, PID: os.Getpid(), Placeholders: created}); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: %w", ErrSetup, err))
		return
	}

	cwd := req.Dir
	if cwd == "" {
		cwd = eff.Root
	}
	host := ProbeHost()
	proc := spec.Process{Args: req.Args, Cwd: cwd, UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Terminal: req.TTY}
	ro := spec.RunOptions{
		Rootfs:   r.state.rootfs(id),
		Rootless: r.rootless,
		HostUID:  uint32(os.Getuid()),
		HostGID:  uint32(os.Getgid()),
		Hostname: "cordon",
		Host:     &host,
	}
	if !r.rootless {
		ro.CgroupsPath = "/cordon/" + id
	}
	ociSpec, err := spec.ToOCI(eff, proc, ro)
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: %w", ErrSetup, err))
		return
	}
	ph.mark("oci")
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:      id,
		Spec:            ociSpec,
		NoNewKeyring:    false, // a fresh session keyring, not cordon's
		RootlessEUID:    r.rootless,
		RootlessCgroups: r.rootless,
	})
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: libcontainer config: %w", ErrSetup, err))
		return
	}
	var seccompFlags uint
	// cordon's init loads the filter (compiled once and cached) before it
	// starts the command, instead of libcontainer compiling it in every
	// container's init.
	bpf, err := r.seccompProgram(config.Seccomp)
	if err == nil {
		seccompFlags, err = seccompLoadFlags(config.Seccomp)
	}
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: seccomp: %w", ErrSetup, err))
		return
	}
	config.Seccomp = nil

	ph.mark("config")
	container, err := libcontainer.Create(r.state.lcRoot(), id, config)
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: create container: %w", ErrSetup, err))
		return
	}
	ph.mark("create")
	lp, err := newProcess(ociSpec.Process)
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: %w", ErrSetup, err))
		return
	}
	lp.Init = true
	lp.Env = append(handOverLoaderEnv(lp.Env), seccompEnvValue(bpf, seccompFlags))
	liveR, liveW, err := os.Pipe()
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: liveness pipe: %w", ErrSetup, err))
		return
	}
	// Held until the run is over: when cordon dies, the init sees EOF.
	defer liveW.Close()
	lp.ExtraFiles = []*os.File{liveR}
	lp.Args = initArgs(lp.Args)

	stdout := NewCappedWriter(req.Stdout, sb.Limits.Output)
	stderrCap := NewCappedWriter(req.Stderr, sb.Limits.Output)
	tail := NewTailBuffer(stderrTail)
	io_, err := newStdio(req, lp, stdout, io.MultiWriter(stderrCap, tail))
	if err != nil {
		setupFailed(res, fmt.Errorf("%w: stdio: %w", ErrSetup, err))
		return
	}
	defer io_.close()

	err = container.Run(lp)
	liveR.Close()
	if err != nil {
		io_.abort()
		classifyStartError(res, err)
		return
	}
	if err := io_.started(req); err != nil {
		_ = container.Signal(unix.SIGKILL)
		_, _ = lp.Wait()
		setupFailed(res, fmt.Errorf("%w: console: %w", ErrSetup, err))
		return
	}

	ph.mark("start")
	waitC := make(chan waitResult, 1)
	go func() {
		ps, err := lp.Wait()
		waitC <- waitResult{ps, err}
	}()
	var timeoutC <-chan time.Time
	if t := req.EffectiveTimeout(); t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeoutC = timer.C
	}
	timedOut, canceled := false, false
	kills := 0
	var wr waitResult
loop:
	for {
		select {
		case wr = <-waitC:
			break loop
		case <-timeoutC:
			timedOut = true
			killAll(container)
		case <-ctx.Done():
			canceled = true
			killAll(container)
		case sig := <-req.Signals:
			if sig == unix.SIGWINCH {
				io_.resize(req)
				continue
			}
			if sig == os.Interrupt || sig == unix.SIGTERM {
				kills++
				if kills > 1 {
					// The command runs as PID 1 of its namespace and
					// ignores signals it has no handler for: a second
					// interrupt ends the sandbox.
					killAll(container)
					continue
				}
			}
			if s, ok := sig.(unix.Signal); ok {
				_ = container.Signal(s)
			}
		}
	}
	// Every process of the sandbox is gone once its init is (PID namespace),
	// so the copiers reach EOF.
	ph.mark("wait")
	io_.drain()
	oom := oomKilled(container)

	ws, _ := waitStatus(wr)
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = unix.SignalName(ws.Signal())
	default:
		if wr.err != nil {
			setupFailed(res, fmt.Errorf("%w: wait: %w", ErrSetup, wr.err))
			return
		}
	}
	for _, n := range []string{stdout.TruncationNote("stdout"), stderrCap.TruncationNote("stderr")} {
		if n != "" && req.Stderr != nil {
			_, _ = io.WriteString(req.Stderr, n)
		}
	}
	switch {
	case timedOut:
		res.ExitCode = ExitTimeout
		res.FailureType = FailureTimeout
		res.FailureDetail = fmt.Sprintf("the command ran longer than the timeout of %s and the whole sandbox was killed", req.EffectiveTimeout())
	case canceled:
		res.FailureType = FailureProcessError
		res.FailureDetail = "the run was canceled and the whole sandbox was killed"
	case oom:
		res.FailureType = FailureOOM
		res.FailureDetail = fmt.Sprintf("the command exceeded the memory limit of %s and was killed", spec.FormatBytes(sb.Limits.Memory))
	case res.ExitCode == 0:
		res.FailureType = FailureNone
	default:
		classifyExit(res, table, eff, cwd, tail.String())
	}
}

// handOverLoaderEnv renames the variables the dynamic loader acts on
// (LD_*), so they reach the command but not cordon's PID 1, which must not
// load foreign code before its seccomp filter is in place; the init
// restores them just before it executes the command.
func handOverLoaderEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "LD_") {
			kv = loaderEnvPrefix + kv
		}
		out = append(out, kv)
	}
	return out
}

// loaderEnvPrefix must match CORDON_ENV_PREFIX in sandboxinit_linux.c.
const loaderEnvPrefix = "_CORDON_ENV_"

// checkStateHidden refuses a sandbox that would show cordon's state
// directory to the command: that directory holds container state (with the
// hooks libcontainer runs on the host when it destroys a container), the
// seccomp cache and the placeholder registry, so a command that could write
// it could run code on the host or disable a later run's filter.
func (r *linuxRunner) checkStateHidden(sb *spec.Sandbox) error {
	state, err := filepath.EvalSymlinks(r.state.dir)
	if err != nil {
		state = r.state.dir
	}
	var sources []string
	if sb.Root != "" {
		sources = append(sources, sb.Root)
	}
	for _, m := range sb.Mounts {
		sources = append(sources, m.Source)
	}
	if sb.System.Kind == spec.SystemRootfs {
		sources = append(sources, sb.System.Rootfs)
	}
	for _, src := range sources {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			real = src
		}
		if real == "/" || state == real || strings.HasPrefix(state+"/", strings.TrimSuffix(real, "/")+"/") {
			return fmt.Errorf("%w: the mount of %s would show cordon's state directory %s to the sandbox; "+
				"mount a narrower directory, or point cordon at another state directory (XDG_RUNTIME_DIR or TMPDIR for rootless runs)",
				ErrUnenforceable, src, r.state.dir)
		}
	}
	return nil
}

// classifyExit types a non-zero exit: a sandbox denial when the policy
// explains it, a process error otherwise.
func classifyExit(res *Result, p Policy, sb *spec.Sandbox, cwd, stderr string) {
	// cordon's PID 1 reports its own failures as "cordon: ..." with 125
	// (set-up) or 126/127 (the command cannot be executed).
	if line := initMessage(stderr); line != "" {
		switch res.ExitCode {
		case ExitSetupError:
			setupFailed(res, fmt.Errorf("%w: sandbox init: %s", ErrSetup, line))
			return
		case ExitNotFound, ExitNotRunnable:
			res.FailureType = FailureProcessError
			res.FailureDetail = line
			return
		}
	}
	if d, ok := ClassifyDenial(p, sb, cwd, stderr); ok {
		res.FailureType = FailureSandboxDenied
		res.BlockedPath = d.Path
		res.FailureDetail = d.Detail
		return
	}
	res.FailureType = FailureProcessError
	res.FailureDetail = fmt.Sprintf("the command exited with status %d", res.ExitCode)
	if res.Signal != "" {
		res.FailureDetail = "the command was killed by " + res.Signal
	}
}

// initMessage returns the last line cordon's PID 1 wrote about itself.
func initMessage(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-3; i-- {
		if msg, ok := strings.CutPrefix(lines[i], "cordon: "); ok {
			return msg
		}
	}
	return ""
}

// classifyStartError types a failure of container.Run: the command could
// not be found or executed (127, 126), or the sandbox could not be built.
func classifyStartError(res *Result, err error) {
	msg := err.Error()
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "executable file not found"), strings.Contains(lower, "exec:") && strings.Contains(lower, "no such file or directory"):
		res.ExitCode = ExitNotFound
		res.FailureType = FailureProcessError
		res.FailureDetail = "command not found in the sandbox: " + msg
	case strings.Contains(lower, "exec") && (strings.Contains(lower, "permission denied") || strings.Contains(lower, "exec format error")):
		res.ExitCode = ExitNotRunnable
		res.FailureType = FailureProcessError
		res.FailureDetail = "command cannot be executed in the sandbox: " + msg
	default:
		setupFailed(res, fmt.Errorf("%w: start: %w", ErrSetup, err))
	}
}

type waitResult struct {
	ps  *os.ProcessState
	err error
}

func waitStatus(wr waitResult) (syscall.WaitStatus, bool) {
	if wr.ps != nil {
		if ws, ok := wr.ps.Sys().(syscall.WaitStatus); ok {
			return ws, true
		}
	}
	var ee *exec.ExitError
	if errors.As(wr.err, &ee) && ee.ProcessState != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws, true
		}
	}
	return 0, false
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
	st, err := c.State()
	if err != nil {
		return false
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return counter(filepath.Join(st.CgroupPaths[""], "memory.events"), "oom_kill") > 0
	}
	p := st.CgroupPaths["memory"]
	if p == "" {
		return false
	}
	return counter(filepath.Join(p, "memory.oom_control"), "oom_kill") > 0
}

func counter(file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// newProcess converts an OCI process to a libcontainer one. libcontainer
// exports no such converter; this mirrors runc's own (utils_linux.go).
func newProcess(p *specs.Process) (*libcontainer.Process, error) {
	if p == nil {
		return nil, errors.New("spec has no process")
	}
	lp := &libcontainer.Process{
		Args:            p.Args,
		Env:             p.Env,
		UID:             int(p.User.UID),
		GID:             int(p.User.GID),
		Cwd:             p.Cwd,
		NoNewPrivileges: &p.NoNewPrivileges,
		AppArmorProfile: p.ApparmorProfile,
		Label:           p.SelinuxLabel,
	}
	if p.ConsoleSize != nil {
		lp.ConsoleWidth = uint16(p.ConsoleSize.Width)
		lp.ConsoleHeight = uint16(p.ConsoleSize.Height)
	}
	if c := p.Capabilities; c != nil {
		lp.Capabilities = &configs.Capabilities{
			Bounding: c.Bounding, Effective: c.Effective, Inheritable: c.Inheritable,
			Permitted: c.Permitted, Ambient: c.Ambient,
		}
	}
	for _, g := range p.User.AdditionalGids {
		lp.AdditionalGroups = append(lp.AdditionalGroups, int(g))
	}
	for _, rl := range p.Rlimits {
		t, ok := rlimitTypes[rl.Type]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q", rl.Type)
		}
		lp.Rlimits = append(lp.Rlimits, configs.Rlimit{Type: t, Hard: rl.Hard, Soft: rl.Soft})
	}
	return lp, nil
}

var rlimitTypes = map[string]int{
	"RLIMIT_CPU": unix.RLIMIT_CPU, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_DATA": unix.RLIMIT_DATA,
	"RLIMIT_STACK": unix.RLIMIT_STACK, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK,
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO,
	"RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
}

func stderrOf(req Request) io.Writer {
	if req.Stderr != nil {
		return req.Stderr
	}
	return io.Discard
}

// stdio wires the command's stdio through pipes cordon owns, so that no
// host descriptor (a terminal in particular, which TIOCSTI could abuse)
// crosses into the sandbox, and so that cordon can stop waiting for input
// the moment the command is gone.
type stdio struct {
	closeAfterStart []io.Closer
	stdinW          *os.File
	copiers         sync.WaitGroup
	console         *os.File
	consoleSock     *os.File
	stdout, stderr  io.Writer
}

func newStdio(req Request, lp *libcontainer.Process, stdout, stderr io.Writer) (*stdio, error) {
	s := &stdio{stdout: stdout, stderr: stderr}
	if req.TTY {
		parent, child, err := socketPair()
		if err != nil {
			return nil, err
		}
		lp.ConsoleSocket = child
		if req.TermSize != nil {
			if c, r, ok := req.TermSize(); ok {
				lp.ConsoleWidth, lp.ConsoleHeight = c, r
			}
		}
		s.consoleSock = parent
		s.closeAfterStart = append(s.closeAfterStart, child)
		return s, nil
	}
	if req.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		lp.Stdin = r
		s.stdinW = w
		s.closeAfterStart = append(s.closeAfterStart, r)
		go func() {
			_, _ = io.Copy(w, req.Stdin)
			w.Close()
		}()
	}
	for _, o := range []struct {
		dst io.Writer
		set func(*os.File)
	}{{stdout, func(f *os.File) { lp.Stdout = f }}, {stderr, func(f *os.File) { lp.Stderr = f }}} {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		o.set(w)
		s.closeAfterStart = append(s.closeAfterStart, w)
		s.copiers.Add(1)
		go func(dst io.Writer) {
			defer s.copiers.Done()
			_, _ = io.Copy(dst, r)
			r.Close()
		}(o.dst)
	}
	return s, nil
}

// started is called once the container runs: it drops cordon's copies of
// the child's ends and, for a TTY, receives the console.
func (s *stdio) started(req Request) error {
	for _, c := range s.closeAfterStart {
		c.Close()
	}
	s.closeAfterStart = nil
	if s.consoleSock == nil {
		return nil
	}
	f, err := recvFile(s.consoleSock)
	s.consoleSock.Close()
	s.consoleSock = nil
	if err != nil {
		return err
	}
	s.console = f
	s.resize(req)
	if req.Stdin != nil {
		go func() { _, _ = io.Copy(f, req.Stdin) }()
	}
	s.copiers.Add(1)
	go func() {
		defer s.copiers.Done()
		_, _ = io.Copy(s.stdout, f)
	}()
	return nil
}

func (s *stdio) resize(req Request) {
	if s.console == nil || req.TermSize == nil {
		return
	}
	if c, r, ok := req.TermSize(); ok {
		_ = unix.IoctlSetWinsize(int(s.console.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: c, Row: r})
	}
}

// abort releases everything after a failed start.
func (s *stdio) abort() {
	for _, c := range s.closeAfterStart {
		c.Close()
	}
	s.closeAfterStart = nil
	if s.consoleSock != nil {
		s.consoleSock.Close()
	}
}

// drain waits for the output copiers. The console master never reports EOF
// while cordon holds it, so it is closed first once the command is gone.
func (s *stdio) drain() {
	if s.console != nil {
		// Let the last output arrive before the master goes away.
		done := make(chan struct{})
		go func() { s.copiers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
		s.console.Close()
	}
	s.copiers.Wait()
}

func (s *stdio) close() {
	if s.stdinW != nil {
		s.stdinW.Close()
	}
	if s.console != nil {
		s.console.Close()
	}
}

func socketPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[1]), "console-parent"), os.NewFile(uintptr(fds[0]), "console-child"), nil
}

// recvFile receives one descriptor over a unix socket (SCM_RIGHTS).
func recvFile(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("recvmsg: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("console: expected one control message (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("console: expected one descriptor (%v)", err)
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}

package session

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
	"github.com/cordon-run/cordon/spec"
)

// linuxSession is a warm session: one libcontainer container whose PID 1
// is the C fork server of sessioninit_linux.c.
type linuxSession struct {
	id         string
	sb, eff    *spec.Sandbox
	table      *mounts.Table
	sum        spec.Summary
	backend    string
	unenforced []string
	container  *libcontainer.Container
	ctrl       *os.File // the supervisor's end of the control socket
	devNull    *os.File
	devNullFD  int
	oomFile    string // the cgroup file whose oom_kill counter types OOMs
	pidsFile   string // the cgroup file whose "max" counter types pids_limit
	// leaves is the per-exec cgroup state (cgroup v2), see sessionleaf_linux.go.
	leaves sessionLeaves
	// denials holds each running exec's refusals, from the broker.
	denials execDenials
	// built is what the backend built, with its undo steps.
	built Built
	// cleanedUp tells the session's reaper the session was cleaned up here.
	cleanedUp func()

	life   lifecycle
	sendMu sync.Mutex
	nextID atomic.Uint64
	// spares are the supervisor's ends of the sockets of shims forked
	// ahead of their exec (oldest first); spareMu guards them.
	spareMu     sync.Mutex
	spares      []shimConn
	sparesEnded bool // teardown closed them; no more are made

	goneOnce sync.Once
	gone     chan struct{}
	goneErr  error
	closed   chan struct{} // closed once Close finished the cleanup
	reaped   chan struct{} // closed once watch reaped the init
	watching bool          // watch runs (the init was started)
	closeMu  sync.Mutex
	cleaned  bool
	// initPid and initPidfd name the sandbox's init (OpenRoot).
	rootMu    sync.Mutex
	initPid   int
	initPidfd *os.File
}

// Start starts a session in the sandbox the backend built (c.Built): its
// fork server as PID 1, and returns once that server has loaded the seccomp
// filter and is ready to run commands. On a failure it tears down what was
// built.
func Start(ctx context.Context, req runner.SessionRequest, c Config) (runner.Session, error) {
	b := c.Built
	s := &linuxSession{sb: c.Sandbox, sum: spec.Summarize(c.Sandbox), gone: make(chan struct{}), closed: make(chan struct{}), reaped: make(chan struct{}), backend: c.Backend,
		built: b, cleanedUp: c.CleanedUp, unenforced: c.Unenforced, table: b.Table(), id: b.ID(), eff: b.Effective(), container: b.Container()}
	if err := s.launch(ctx); err != nil {
		s.teardown()
		return nil, err
	}
	s.life.start(req.IdleTimeout, req.MaxLifetime, func(reason string) {
		s.kill(reason)
		_ = s.teardown()
	})
	return s, nil
}

// launch starts the fork server in the container created by the set-up
// steps, runs the started steps, and waits until it is ready.
func (s *linuxSession) launch(ctx context.Context) error {
	b := s.built
	lp, err := b.Process()
	if err != nil {
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	lp.Init = true
	// PID 1 needs no environment of its own: each exec brings one. So no
	// LD_* variable can load code into it.
	lp.Env = []string{"PATH=" + spec.DefaultPath, b.SeccompEnv()}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: control socket: %w", runner.ErrSetup, err)
	}
	// The supervisor's end goes through Go's poller (so Close interrupts a
	// read); the init's end stays blocking.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return fmt.Errorf("%w: control socket: %w", runner.ErrSetup, err)
	}
	s.ctrl = os.NewFile(uintptr(fds[0]), "session-control")
	child := os.NewFile(uintptr(fds[1]), "session-control-init")
	defer child.Close()
	lp.ExtraFiles = []*os.File{child}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	lp.Stderr = stderrW
	initErr := runner.NewTailBuffer(4096)
	go func() { _, _ = io.Copy(initErr, stderrR); stderrR.Close() }()
	if s.devNull, err = os.Open(os.DevNull); err != nil {
		stderrW.Close()
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	s.devNullFD = int(s.devNull.Fd())
	err = s.container.Start(lp)
	stderrW.Close()
	child.Close()
	if err != nil {
		return fmt.Errorf("%w: start: %w", runner.ErrSetup, err)
	}
	if err := b.Started(lp); err != nil {
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	if err := s.container.Exec(); err != nil {
		return fmt.Errorf("%w: start: %w", runner.ErrSetup, err)
	}
	if err := s.awaitReady(ctx, initErr); err != nil {
		return err
	}
	// Before any shim is forked: shims are forked into P/init.
	s.setupLeaves()
	// The first exec's shim, forked while the caller gets ready.
	s.spareMu.Lock()
	err = s.topUp(spareShims)
	s.spareMu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: the session's first shims: %w", runner.ErrSetup, err)
	}
	s.oomFile = oomCounterFile(s.container, s.eff)
	if s.eff.Limits.Pids > 0 {
		s.pidsFile = cgroup.PidsEventsFile(s.container)
	}
	// The init is this process's child, reaped only by watch: its pid
	// names it until then, so the pidfd taken here names it for good.
	if pid, err := lp.Pid(); err == nil {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			s.initPid, s.initPidfd = pid, os.NewFile(uintptr(fd), "pidfd")
		}
	}
	s.watching = true
	go s.watch(lp)
	return nil
}

// awaitReady waits for the fork server's ready byte: it is written after
// the seccomp filter is loaded, before any command can run.
func (s *linuxSession) awaitReady(ctx context.Context, initErr *runner.TailBuffer) error {
	ready := make(chan error, 1)
	serve := s.built.Broker(s.ctrl, &s.denials)
	go func() {
		// The init sends its seccomp listener first, then "R": the
		// broker serves it before any command can run.
		if err := serve(); err != nil {
			ready <- err
			return
		}
		b := make([]byte, 1)
		n, err := s.ctrl.Read(b)
		if n == 1 && b[0] == pid1.SessionReadyByte {
			ready <- nil
			return
		}
		ready <- fmt.Errorf("no ready signal (%v)", err)
	}()
	timer := time.NewTimer(pid1.SessionReadyWithin)
	defer timer.Stop()
	var err error
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("not ready within %s", pid1.SessionReadyWithin)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	_ = s.container.Signal(unix.SIGKILL)
	time.Sleep(20 * time.Millisecond) // let the init's last words arrive
	if msg := strings.TrimSpace(initErr.String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	return fmt.Errorf("%w: the session's init: %w", runner.ErrSetup, err)
}

// watch marks the session gone as soon as its PID 1 is: the control
// socket reaches EOF (the init never writes after its ready byte) or the
// init is reaped.
func (s *linuxSession) watch(lp *libcontainer.Process) {
	said := make(chan struct{})
	go func() {
		defer close(said)
		b := make([]byte, 64)
		n, err := s.ctrl.Read(b)
		if err != nil {
			s.markGone("the sandbox's init exited")
			return
		}
		// Nothing else may come after the ready byte: the init is not
		// trusted to speak, so the session ends either way; "A" only
		// says why (it could not put back its own attributes).
		if n == 1 && b[0] == pid1.SessionAbortByte {
			s.kill(attrsLowered)
			return
		}
		s.kill("the sandbox's init broke the protocol")
	}()
	_, _ = lp.Wait()
	close(s.reaped)
	// The reason the init gave before it exited ("A") comes first: its
	// socket reaches EOF as it dies, so the reader is done at once.
	select {
	case <-said:
	case <-time.After(100 * time.Millisecond):
	}
	s.markGone("the sandbox's init exited")
}

func (s *linuxSession) markGone(reason string) {
	s.goneOnce.Do(func() {
		s.goneErr = &runner.SessionGoneError{Session: s.id, Reason: reason}
		close(s.gone)
		logrus.WithField("session", s.id).WithField("reason", reason).Debug("session gone")
	})
}

// kill ends the sandbox (its PID namespace dies with its init).
func (s *linuxSession) kill(reason string) {
	s.markGone(reason)
	if s.container != nil {
		_ = s.container.Signal(unix.SIGKILL)
	}
}

// ID implements Session.
func (s *linuxSession) ID() string { return s.id }

// Done implements Session.
func (s *linuxSession) Done() <-chan struct{} { return s.gone }

// Err implements Session.
func (s *linuxSession) Err() error {
	select {
	case <-s.gone:
		return s.goneErr
	default:
		return nil
	}
}

// Unenforced implements Session.
func (s *linuxSession) Unenforced() []string { return append([]string(nil), s.unenforced...) }

// Backend implements Session.
func (s *linuxSession) Backend() string { return s.backend }

// Close implements Session.
func (s *linuxSession) Close() error {
	s.life.close()
	s.kill("stopped")
	s.awaitReaped()
	return s.teardown()
}

// awaitReaped waits until the session's init has been reaped, so that no
// process of the session (not even a zombie) is left when Close returns.
// A SIGKILLed init is reaped at once; the bound only keeps a broken kernel
// from hanging Close.
func (s *linuxSession) awaitReaped() {
	if !s.watching {
		return
	}
	select {
	case <-s.reaped:
	case <-time.After(10 * time.Second):
		logrus.WithField("session", s.id).Warn("the session's init was not reaped 10s after SIGKILL")
	}
}

// teardown removes everything the session left on the host; it runs once.
func (s *linuxSession) teardown() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.cleaned {
		return nil
	}
	s.cleaned = true
	defer close(s.closed)
	defer s.cleanedUp() // after the cleanup: nothing is left to reap
	if s.ctrl != nil {
		s.ctrl.Close()
	}
	s.spareMu.Lock()
	for _, sh := range s.spares {
		sh.f.Close()
	}
	s.spares, s.sparesEnded = nil, true
	s.spareMu.Unlock()
	if s.devNull != nil {
		s.devNull.Close()
	}
	s.rootMu.Lock()
	if s.initPidfd != nil {
		s.initPidfd.Close()
		s.initPidfd = nil
	}
	s.rootMu.Unlock()
	if s.leaves.home != nil {
		s.leaves.home.Close()
	}
	// The build's undo steps: the container, its cgroups, placeholders
	// and state directory, then the lock.
	return s.built.Teardown()
}

// rootDir is the default working directory: the workspace, or / without one.
func (s *linuxSession) rootDir() string {
	if s.eff != nil && s.eff.Root != "" {
		return s.eff.Root
	}
	return "/"
}

// oomCounterFile is the cgroup file whose oom_kill counter rises when the
// memory limit kills a process of the session; "" without a memory limit.
func oomCounterFile(c *libcontainer.Container, sb *spec.Sandbox) string {
	if sb.Limits.Memory <= 0 {
		return ""
	}
	st, err := c.State()
	if err != nil {
		return ""
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return filepath.Join(st.CgroupPaths[""], "memory.events")
	}
	if p := st.CgroupPaths["memory"]; p != "" {
		return filepath.Join(p, "memory.oom_control")
	}
	return ""
}

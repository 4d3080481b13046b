package cordon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Session is a warm sandbox: it is built once and runs many commands, each
// at about the cost of a fork and an exec. Every command gets the boundary
// Run would give it (mounts, deny and protect, network, seccomp,
// no_new_privs, no capabilities, limits) and its own environment, working
// directory, fd table, timeout and output cap; when it ends, every process
// it started is killed unless it ran with Detach. The workspace, /tmp and
// the session-wide cgroup limits are shared between commands. A Session is
// safe for concurrent use.
type Session struct {
	sb *Sandbox
	rs runner.Session
	// overlay is the overlay the session writes to, or "".
	overlay string
}

// SessionOption adjusts a session as it starts.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	id        string
	bounds    spec.Session
	stderr    io.Writer
	lockedDir string
	overlay   string
}

// SessionOverlay runs the session's commands in the copy-on-write overlay
// name of the workspace, as InOverlay does a run's; the overlay is held
// (no other run, session or apply may use it) until the session ends.
func SessionOverlay(name string) SessionOption { return func(c *sessionConfig) { c.overlay = name } }

// SessionStderr sends the backend's warnings about what it does not
// enforce for the session to w (default: discarded).
func SessionStderr(w io.Writer) SessionOption { return func(c *sessionConfig) { c.stderr = w } }

// SessionIdleTimeout stops the session after d with no command running
// (default: the config's session.idle_timeout).
func SessionIdleTimeout(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.bounds.IdleTimeout = d }
}

// SessionMaxLifetime stops the session d after it started (default: the
// config's session.max_lifetime).
func SessionMaxLifetime(d time.Duration) SessionOption {
	return func(c *sessionConfig) { c.bounds.MaxLifetime = d }
}

// SessionID names the session's sandbox in logs and state (default: a
// random id).
func SessionID(id string) SessionOption { return func(c *sessionConfig) { c.id = id } }

// SessionLockedDir names a directory of the caller's whose file "lock"
// this process holds flocked for the session's life, such as a named
// session's socket directory. If this process dies without closing the
// session (SIGKILL), the session's reaper, which then removes the
// sandbox's state and cgroups at once, removes that directory and its
// files too, once it can take the lock.
func SessionLockedDir(dir string) SessionOption { return func(c *sessionConfig) { c.lockedDir = dir } }

// StartSession builds the sandbox once and returns when it is ready to run
// commands. A host that cannot enforce the sandbox fails it closed as Run
// does; backends without sessions return runner.ErrSessionsUnsupported.
func (s *Sandbox) StartSession(ctx context.Context, opts ...SessionOption) (*Session, error) {
	c := sessionConfig{bounds: s.p.cfg.Session}
	for _, o := range opts {
		o(&c)
	}
	r, err := s.p.backend()
	if err != nil {
		return nil, err
	}
	st, ok := r.(runner.SessionStarter)
	if !ok {
		return nil, runner.ErrSessionsUnsupported
	}
	if err := s.p.log.Session(s.sb); err != nil {
		return nil, fmt.Errorf("the session was not started: %w", err)
	}
	sb, release := s.sb, func() {}
	if c.overlay == "" {
		c.overlay = s.sb.OverlayName
	}
	if c.overlay != "" {
		if sb, _, release, err = startOverlay(s.sb, c.overlay); err != nil {
			return nil, err
		}
	}
	rs, err := st.StartSession(ctx, runner.SessionRequest{Sandbox: sb, ID: c.id, Stderr: c.stderr,
		IdleTimeout: c.bounds.IdleTimeout, MaxLifetime: c.bounds.MaxLifetime, LockedDir: c.lockedDir,
		Links: s.recentLinks()})
	if err != nil {
		release()
		return nil, err
	}
	go func() {
		<-rs.Done()
		release()
	}()
	return &Session{sb: s, rs: rs, overlay: c.overlay}, nil
}

// ID is the session's sandbox id.
func (s *Session) ID() string { return s.rs.ID() }

// Sandbox is the sandbox every command of the session runs in.
func (s *Session) Sandbox() *Sandbox { return s.sb }

// Done is closed once the session's sandbox is gone.
func (s *Session) Done() <-chan struct{} { return s.rs.Done() }

// Err is nil while the session runs; then a *runner.SessionGoneError
// (matching runner.ErrSessionGone) that says why it ended.
func (s *Session) Err() error { return s.rs.Err() }

// Exec runs args in the session and returns its typed result, with the
// same exit codes and failure types as Run, plus session_gone when the
// session's sandbox no longer runs (then the error matches
// runner.ErrSessionGone too). The options Stdin, Stdout, Stderr, Dir,
// Timeout, Env and Detach apply. The error is otherwise non-nil only when
// the command could not be attempted or recorded, as for Run (matching
// ErrNotStarted or ErrNotRecorded).
func (s *Session) Exec(ctx context.Context, args []string, opts ...RunOption) (Result, error) {
	var c runConfig
	for _, o := range opts {
		o(&c)
	}
	if err := s.Err(); err != nil {
		return goneResult(err), err
	}
	run, err := s.sb.p.log.Start(s.sb.sb, args, s.sb.table)
	if err != nil {
		return setupResult(err), fmt.Errorf("%w: %w", ErrNotStarted, err)
	}
	res, err := s.rs.Exec(ctx, runner.ExecRequest{
		Args: args, Dir: c.req.Dir, Env: c.env, Stdin: c.req.Stdin, Stdout: c.req.Stdout, Stderr: c.req.Stderr,
		Timeout: c.req.Timeout, Detach: c.detach, Signals: c.signals, TTY: c.req.TTY, TermSize: c.req.TermSize,
		TypeAhead: c.req.TypeAhead, Memory: c.memory,
	})
	if aerr := run.Finish(auditOutcome(res)); aerr != nil {
		return res, errors.Join(err, notRecorded(res, aerr))
	}
	return res, err
}

// Close ends the session: the sandbox and every process in it, and
// everything it left on the host. Later execs fail with session_gone. The
// network decisions made after the last exec ended are recorded in the
// audit log then; an error that says so matches ErrNotRecorded.
func (s *Session) Close() error {
	err := s.rs.Close()
	if t, ok := s.rs.(runner.NetworkTail); ok {
		if evs := t.UnreportedNetwork(); len(evs) > 0 {
			if aerr := s.sb.p.log.SessionNetwork(s.sb.sb, evs); aerr != nil {
				err = errors.Join(err, fmt.Errorf("the session ended but %w: %d network decisions after its last command: %w", ErrNotRecorded, len(evs), aerr))
			}
		}
	}
	return err
}

func goneResult(err error) runner.Result {
	return runner.Result{ExitCode: runner.ExitSetupError, FailureType: runner.FailureSessionGone, FailureDetail: err.Error()}
}

// Env sets the host environment that the sandbox's env.pass picks
// variables from, for a session's exec (default: this process's).
func Env(env []string) RunOption { return func(c *runConfig) { c.env = env } }

// Detach leaves the processes a session's exec started running after it
// exits (servers that must outlive the command). Their output is no longer
// read once the command exits. Run ignores it.
func Detach() RunOption { return func(c *runConfig) { c.detach = true } }

// ExecMemory limits a session's exec to n bytes of memory, it and every
// process it starts, narrowing the session's own limit for that command
// alone: it needs cgroup v2 and a session with a memory limit (each exec
// then runs in a cgroup of its own), and n at most that limit; otherwise
// the exec is refused with a setup_error that says so. Run ignores it.
func ExecMemory(n int64) RunOption { return func(c *runConfig) { c.memory = n } }

// Signals forwards the signals received on ch to a session exec's process
// group. Run ignores it.
func Signals(ch <-chan int) RunOption { return func(c *runConfig) { c.signals = ch } }

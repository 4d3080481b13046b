package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cordon-run/cordon/internal/netguard/netevent"
	"github.com/cordon-run/cordon/spec"
)

// FailureSessionGone means the session's sandbox is no longer running (it
// was stopped, reached its idle timeout or maximum lifetime, or died), so
// the command was not run, or was cut off when the sandbox went away.
const FailureSessionGone FailureType = "session_gone"

var (
	// ErrSessionGone matches every exec refused or cut off because its
	// session's sandbox is no longer running.
	ErrSessionGone = errors.New("session_gone")
	// ErrSessionsUnsupported is returned by StartSession where warm
	// sessions are not implemented (every backend but libcontainer).
	ErrSessionsUnsupported = errors.New("cordon: warm sessions need the Linux (libcontainer) backend")
)

// SessionGoneError says why a session's sandbox is gone. It matches
// ErrSessionGone.
type SessionGoneError struct {
	// Session is the session's id.
	Session string
	// Reason says how it ended: "stopped", "idle timeout of 10m0s", "the
	// sandbox's init exited", ...
	Reason string
}

func (e *SessionGoneError) Error() string {
	return fmt.Sprintf("session_gone: session %s is no longer running (%s); start a new session to run more commands", e.Session, e.Reason)
}

// Is makes the error match ErrSessionGone.
func (e *SessionGoneError) Is(target error) bool { return target == ErrSessionGone }

// SessionStarter is implemented by backends that can keep one sandbox up
// and run many commands in it.
type SessionStarter interface {
	StartSession(ctx context.Context, req SessionRequest) (Session, error)
}

// SessionRequest describes the sandbox of a warm session.
type SessionRequest struct {
	// Sandbox is the effective (already derived) sandbox every exec of the
	// session runs in.
	Sandbox *spec.Sandbox
	// ID names the session's sandbox in logs and state; "" picks one.
	ID string
	// Stderr receives warnings about what the backend does not enforce.
	Stderr io.Writer
	// IdleTimeout, when above zero, stops the session after that long
	// with no exec running; MaxLifetime, when above zero, stops it that
	// long after it started (spec.Session, from the config's `session:`).
	IdleTimeout, MaxLifetime time.Duration
	// LockedDir, when not "", is a directory of the caller's whose file
	// "lock" this process holds flocked for the session's life (a named
	// session's socket and info). When this process dies without closing
	// the session (SIGKILL), the reaper that removes the session's
	// leftovers at once removes that directory and its files too.
	LockedDir string
	// Links are as Request.Links.
	Links *spec.Links
}

// SessionRoot is a Session whose root directory the caller can open: the
// sandbox's file system as its commands see it (its mounts, an overlay of
// the workspace included). The caller closes the directory.
type SessionRoot interface {
	OpenRoot() (*os.File, error)
}

// Session is one running sandbox that runs commands on request. Every exec
// gets the boundary a cold run of the same sandbox would get; see the
// README for what execs share and what they do not.
type Session interface {
	// ID is the session's sandbox id.
	ID() string
	// Exec runs one command. Its Result is typed as a cold run's; when the
	// session is gone it is FailureSessionGone (exit 125) and the error
	// matches ErrSessionGone. Exec is safe for concurrent use.
	Exec(ctx context.Context, req ExecRequest) (Result, error)
	// Close ends the sandbox and removes everything it left on the host.
	// Execs still running end with FailureSessionGone.
	Close() error
	// Done is closed once the session's sandbox is gone.
	Done() <-chan struct{}
	// Err says why the session is gone (a *SessionGoneError), or nil.
	Err() error
	// Unenforced lists what the backend does not enforce for this sandbox.
	Unenforced() []string
	// Backend names the backend, as Result.Backend does.
	Backend() string
}

// NetworkTail is implemented by sessions whose network guard may decide
// after the last exec ended (a connection that closes late, what a
// detached exec left running): once the session is closed,
// UnreportedNetwork returns the decisions no exec's result reported, so
// that they are recorded too. Each is returned once.
type NetworkTail interface {
	UnreportedNetwork() []netevent.Event
}

// ExecRequest is one command to run in a session.
type ExecRequest struct {
	// Args is the command; Args[0] is looked up in PATH inside the
	// sandbox when it has no slash.
	Args []string
	// Dir is the working directory inside the sandbox (default: the
	// workspace); a relative one is relative to the workspace.
	Dir string
	// Env is the host environment the sandbox's env.pass picks variables
	// from (nil: this process's environment). The command gets exactly
	// spec.ProcessEnv's result, as a cold run does.
	Env []string
	// Stdin, Stdout and Stderr are the command's stdio, as in Request.
	// When Stdin is an *os.File it is read only while the command runs.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Timeout, when above zero, kills the command and everything it
	// started after that long; the sandbox's own timeout still applies
	// when it is shorter.
	Timeout time.Duration
	// Detach leaves the processes the command started running when it
	// exits (servers that must outlive it). Without it, everything the
	// command started is killed when it ends.
	Detach bool
	// Signals, when not nil, carries signals to forward to the command's
	// process group. SIGWINCH resizes a TTY exec's terminal instead.
	Signals <-chan int
	// TTY gives the command a fresh terminal of the sandbox's own (never
	// the caller's); Stdin and Stdout then carry its traffic, and Stderr
	// gets only cordon's own notes.
	TTY bool
	// TermSize, for a TTY exec, reports the caller's terminal size; it is
	// read at start and on every SIGWINCH that Signals delivers.
	TermSize func() (cols, rows uint16, ok bool)
	// TypeAhead, for a TTY exec, is written to the command's terminal
	// before Stdin: the input the caller's terminal held when it was made
	// raw (MakeRaw).
	TypeAhead []byte
	// Memory, when above zero, limits this command and every process it
	// starts to that many bytes: at most the session's memory limit, and
	// only where each exec has a cgroup of its own (cgroup v2 and a
	// session memory limit); otherwise the exec fails with setup_error.
	Memory int64
}

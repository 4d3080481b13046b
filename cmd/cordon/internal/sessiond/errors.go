package sessiond

import "errors"

var (
	// ErrBadName marks a session name that is not 1-64 of A-Z a-z 0-9 . _ -
	// starting with a letter or digit.
	ErrBadName = errors.New("invalid session name")
	// ErrExists marks a name whose session is already running.
	ErrExists = errors.New("a session with this name is already running")
	// ErrNotRunning marks a name with no running session.
	ErrNotRunning = errors.New("no session with this name is running")
	// ErrNotSupervisor marks a session socket served by a process that is
	// not the session's supervisor: nothing is sent to it.
	ErrNotSupervisor = errors.New("the session's socket is not served by its supervisor")
	// ErrNoDetached marks an id that names no detached exec of the session.
	ErrNoDetached = errors.New("no such detached exec")
	// ErrProtocol marks a malformed message on a session socket.
	ErrProtocol = errors.New("session protocol error")
	// ErrUnsupported is returned where named sessions are not available
	// (every OS but Linux).
	ErrUnsupported = errors.New("cordon: named sessions need Linux")
)

package mcpserver

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels of this package.
var (
	// ErrTimeout is matched by a shell timeout that is not a positive number
	// of seconds or is above the sandbox's own timeout.
	ErrTimeout = errors.New("invalid shell timeout")
	// ErrNoSandbox means New was given no sandbox.
	ErrNoSandbox = errors.New("mcpserver: no sandbox")
	// ErrNoWorkspace means a tool was given no path in a sandbox that has no
	// workspace to default to.
	ErrNoWorkspace = errors.New("this sandbox has no workspace")
	// ErrOverlayNoSession means a file tool of a server in overlay mode
	// found no sandbox holding the overlay: the file tools reach an
	// overlay only through the session that mounts it.
	ErrOverlayNoSession = errors.New("the file tools reach the overlay only through the sandbox that mounts it, and it could not be started")
	// ErrEmptyCommand means shell was called without a command.
	ErrEmptyCommand = errors.New("empty command")
)

// TimeoutError is a shell timeout the sandbox does not allow.
type TimeoutError struct {
	// Seconds is the timeout asked for.
	Seconds float64
	// Max is the sandbox's timeout (0: none).
	Max time.Duration
}

// Error says what was asked and what the maximum is.
func (e *TimeoutError) Error() string {
	if e.Max > 0 && e.Seconds > e.Max.Seconds() {
		return fmt.Sprintf("timeout %g seconds is above this sandbox's maximum of %g seconds (%s); "+
			"give a timeout of at most %g, or leave it out to use the maximum", e.Seconds, e.Max.Seconds(), e.Max, e.Max.Seconds())
	}
	return fmt.Sprintf("timeout %g is not a positive number of seconds; give seconds above 0, or leave it out", e.Seconds)
}

// Is reports whether target is ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

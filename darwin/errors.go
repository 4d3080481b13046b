package darwin

import (
	"errors"

	"github.com/cordon-run/cordon/runner"
)

// Sentinel errors of package darwin.
var (
	// ErrUnsupported is returned by New on every OS but macOS, and on a Mac
	// without /usr/bin/sandbox-exec.
	ErrUnsupported = errors.New("the Seatbelt backend needs macOS and /usr/bin/sandbox-exec")
	// ErrUnenforceable means the sandbox asks for something Seatbelt cannot
	// enforce and the sandbox does not allow degradation. It is the one
	// sentinel runner and spec share.
	ErrUnenforceable = runner.ErrUnenforceable
	// ErrUnsafeString means a path or tag cannot be written into a Seatbelt
	// profile without the risk of changing its meaning: it holds a control
	// character (a newline, say), is not absolute, or is longer than a
	// profile string may be.
	ErrUnsafeString = errors.New("cannot be written safely into a Seatbelt profile")
	// ErrBadRequest means a run request lacks a sandbox or a command.
	ErrBadRequest = errors.New("invalid run request")
)

// UnenforceableError lists the parts of a sandbox that Seatbelt cannot
// enforce. Each feature names what is refused, why, and that it works on
// Linux. It is runner's type: every backend refuses alike.
type UnenforceableError = runner.UnenforceableError

package runner

import (
	"errors"

	"github.com/cordon-run/cordon/spec"
)

var (
	// ErrUnsupported is returned by New where this package has no backend
	// (every OS but Linux; macOS uses package darwin).
	ErrUnsupported = errors.New("cordon: no libcontainer backend on this OS")
	// ErrSetup marks a failure to set the sandbox up (exit 125).
	ErrSetup = errors.New("sandbox set-up failed")
	// ErrUnenforceable marks a boundary this host cannot enforce, refused
	// because the sandbox requires OS enforcement. It is spec's sentinel, so
	// errors.Is matches the translation's refusals and every backend's.
	ErrUnenforceable = spec.ErrUnenforceable
	// ErrBadRequest marks an invalid Request (no command, no sandbox).
	ErrBadRequest = errors.New("invalid run request")
)

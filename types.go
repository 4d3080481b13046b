package cordon

import (
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// The types and values a harness touches, so that it needs this package
// only.

// Result is the typed outcome of a run or an exec.
type Result = runner.Result

// DeniedCall is one call the sandbox refused, as a Result lists it.
type DeniedCall = runner.DeniedCall

// FailureType classifies how a run ended.
type FailureType = runner.FailureType

// Failure types of a Result.
const (
	FailureNone          = runner.FailureNone
	FailureProcessError  = runner.FailureProcessError
	FailureSandboxDenied = runner.FailureSandboxDenied
	FailureTimeout       = runner.FailureTimeout
	FailureOOM           = runner.FailureOOM
	FailureSetupError    = runner.FailureSetupError
	FailureSessionGone   = runner.FailureSessionGone
	FailurePidsLimit     = runner.FailurePidsLimit
	FailureFileSizeLimit = runner.FailureFileSizeLimit
	FailureNetworkDenied = runner.FailureNetworkDenied
	FailureConfigError   = runner.FailureConfigError
	FailureOverlayInUse  = runner.FailureOverlayInUse
)

// ExitSetupError is the exit code of a run that could not be set up.
const ExitSetupError = runner.ExitSetupError

// SessionGoneError says why a session ended; it matches ErrSessionGone.
type SessionGoneError = runner.SessionGoneError

// Config is a loaded config file; Worker is a worker file.
type (
	Config = spec.Config
	Worker = spec.Worker
)

// Sentinels a harness matches with errors.Is.
var (
	// ErrWidening: a worker asked for more than its parent allows.
	ErrWidening = spec.ErrWidening
	// ErrUnenforceable: this host cannot enforce the sandbox, which is
	// refused rather than run weaker.
	ErrUnenforceable = runner.ErrUnenforceable
	// ErrUnsupported: this OS has no backend that runs commands.
	ErrUnsupported = runner.ErrUnsupported
	// ErrSessionGone: the session's sandbox no longer runs.
	ErrSessionGone = runner.ErrSessionGone
	// ErrSessionsUnsupported: the backend has no warm sessions.
	ErrSessionsUnsupported = runner.ErrSessionsUnsupported
	// The file tools' refusals (mounts.PathError); each message says what
	// IS allowed.
	ErrOutsideSandbox = mounts.ErrOutsideSandbox
	ErrReadOnly       = mounts.ErrReadOnly
	ErrDenied         = mounts.ErrDenied
	ErrSuffix         = mounts.ErrSuffix
	ErrTooLarge       = mounts.ErrTooLarge
)

// setupResult is the result of a run that failed before its command
// started: setup_error, with the error as its detail.
func setupResult(err error) Result {
	return Result{ExitCode: runner.ExitSetupError, FailureType: runner.FailureSetupError, FailureDetail: err.Error()}
}

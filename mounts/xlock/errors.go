package xlock

import "errors"

var (
	// ErrBusy means another process held the directory's lock for longer
	// than Wait: the call that needed it must fail (closed), not proceed.
	ErrBusy = errors.New("the directory is locked by another process (a sandbox or a cordon on the same workspace); try again")
	// ErrUnsupported means the platform has no flock(2).
	ErrUnsupported = errors.New("cross-process directory locks are not supported on this platform")
)

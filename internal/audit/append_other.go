//go:build !linux && !darwin

package audit

// appendLocked refuses: without flock(2) concurrent appends could
// interleave, and a log that cannot be trusted must not pretend to work.
func appendLocked(string, []byte) error { return ErrUnsupported }

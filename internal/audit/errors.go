package audit

import (
	"errors"
	"fmt"
)

// ErrWrite is matched by every error about an audit record that could not
// be written.
var ErrWrite = errors.New("audit log cannot be written")

// ErrUnsupported means this OS has no flock(2), so appends cannot be made
// safe against concurrent writers; the log refuses to write.
var ErrUnsupported = errors.New("audit log not supported on this OS")

// WriteError is a record that could not be appended to one log file.
type WriteError struct {
	// Path is the audit log file.
	Path string
	// Err is the underlying error.
	Err error
}

// Error renders the failure with the file and what to do about it.
func (e *WriteError) Error() string {
	return fmt.Sprintf("audit log %s cannot be written: %v; fix the file's path or permissions "+
		"(cordon refuses to run what it cannot record)", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *WriteError) Unwrap() error { return e.Err }

// Is reports whether target is ErrWrite.
func (e *WriteError) Is(target error) bool { return target == ErrWrite }

//go:build !linux && !darwin

package hostfile

import (
	"errors"
	"os"
)

// ErrUnsafe is matched by every refusal of Open.
var ErrUnsafe = errors.New("unsafe host file")

// ErrUnsupported: without openat and O_NOFOLLOW a host file cannot be
// opened safely, so it is not opened at all.
var ErrUnsupported = errors.New("hostfile: not supported on this platform")

// Open refuses: see the unix implementation.
func Open(string, bool, os.FileMode) (*os.File, error) { return nil, ErrUnsupported }

//go:build linux && cgo

// The sandbox's PID 1 is C (sandboxinit_linux.c): a constructor that runs
// before the Go runtime starts, as runc's nsenter does, so PID 1 costs an
// exec and a fork rather than a Go start-up.

package pid1

import "C"

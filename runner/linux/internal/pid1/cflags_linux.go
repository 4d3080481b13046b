//go:build linux && cgo

package pid1

// The C of this package (the sandbox and session PID 1s, the reaper, the
// deny cover) builds warning-free: cgo's flags are the package's, so they
// live here, once, for every .c file (docs/development.md, "C").

// #cgo CFLAGS: -Wall -Wextra
import "C"

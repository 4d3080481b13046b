//go:build linux && cgo

package netguard

// The C here builds warning-free (docs/development.md, "C").

// #cgo CFLAGS: -Wall -Wextra
import "C"

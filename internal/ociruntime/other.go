//go:build !linux

package ociruntime

import (
	"fmt"
	"os"
	"runtime"
)

// Backend is empty off Linux: there is no backend to take from.
type Backend struct{}

// Main refuses: cordon-oci runs containers with libcontainer, on Linux
// only.
func Main(args []string, version string, _ Backend) int {
	fmt.Fprintf(os.Stderr, "cordon-oci: %v: the OCI runtime needs Linux (this is %s)\n", ErrUnsupported, runtime.GOOS)
	return 1
}

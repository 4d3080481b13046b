//go:build !linux

package cordon

import "github.com/cordon-run/cordon/internal/ociruntime"

// OCIMain refuses off Linux: cordon-oci runs containers with libcontainer.
func OCIMain(args []string) int {
	return ociruntime.Main(args, Version(), ociruntime.Backend{})
}

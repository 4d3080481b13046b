//go:build !cgo || noseccomp

package seccomp

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/cordon-run/cordon/runner"
)

// Support reports that this build has no seccomp.
func Support() (bool, string) {
	return false, "built with -tags noseccomp: every run fails closed; rebuild with `make build` (cgo and libseccomp-dev)"
}

// LibVersion is "none": no libseccomp is linked.
func LibVersion() string { return "none" }

// Compile fails: without libseccomp no filter can be built, and a
// sandbox is never run without its filter.
func Compile(*configs.Seccomp) ([]byte, error) {
	return nil, fmt.Errorf("%w: cordon was built without seccomp support (-tags noseccomp); rebuild without it, with cgo and libseccomp-dev", runner.ErrUnenforceable)
}

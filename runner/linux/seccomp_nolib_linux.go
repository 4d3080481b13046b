//go:build !cgo || noseccomp

package linux

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"
)

func seccompSupport() (bool, string) {
	return false, "built with -tags noseccomp: every run fails closed; rebuild with `make build` (cgo and libseccomp-dev)"
}

func seccompLibVersion() string { return "none" }

// compileSeccomp fails: without libseccomp no filter can be built, and a
// sandbox is never run without its filter.
func compileSeccomp(*configs.Seccomp) ([]byte, error) {
	return nil, fmt.Errorf("%w: cordon was built without seccomp support (-tags noseccomp); rebuild without it, with cgo and libseccomp-dev", ErrUnenforceable)
}

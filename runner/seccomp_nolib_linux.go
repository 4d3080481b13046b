//go:build !cgo || !seccomp

package runner

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"
)

func seccompSupport() (bool, string) {
	return false, "built without the seccomp tag: every run fails closed; rebuild with `make build`"
}

func seccompLibVersion() string { return "none" }

// compileSeccomp fails: without libseccomp no filter can be built, and a
// sandbox is never run without its filter.
func compileSeccomp(*configs.Seccomp) ([]byte, error) {
	return nil, fmt.Errorf("%w: cordon was built without seccomp support (build with -tags seccomp and libseccomp-dev)", ErrUnenforceable)
}

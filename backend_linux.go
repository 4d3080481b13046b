package cordon

import (
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
)

// newBackend returns the libcontainer backend.
func newBackend() (runner.Runner, error) { return runnerlinux.New(runner.Options{}) }

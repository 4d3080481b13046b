package cordon

import "github.com/cordon-run/cordon/runner"

// newBackend returns the libcontainer backend.
func newBackend() (runner.Runner, error) { return runner.New(runner.Options{}) }

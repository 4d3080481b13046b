//go:build !linux && !darwin

package cordon

import "github.com/cordon-run/cordon/runner"

// newBackend fails: cordon has no OS backend here.
func newBackend() (runner.Runner, error) { return nil, runner.ErrUnsupported }

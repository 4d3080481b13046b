//go:build !linux && !darwin

package main

import (
	"github.com/cordon-run/cordon/runner"
)

// newRunner fails: cordon has no OS backend here.
func newRunner() (runner.Runner, error) { return nil, runner.ErrUnsupported }

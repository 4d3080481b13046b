package main

import (
	"github.com/cordon-run/cordon/runner"
)

// newRunner returns the libcontainer backend.
func newRunner() (runner.Runner, error) { return runner.New(runner.Options{}) }

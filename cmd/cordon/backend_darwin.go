package main

import (
	"github.com/cordon-run/cordon/darwin"
	"github.com/cordon-run/cordon/runner"
)

// newRunner returns the Seatbelt backend.
func newRunner() (runner.Runner, error) { return darwin.New() }

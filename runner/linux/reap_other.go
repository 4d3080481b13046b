//go:build !linux

package linux

import (
	"github.com/cordon-run/cordon/runner"
)

// DefaultStateDir is "" off Linux: there is no libcontainer state.
func DefaultStateDir() string { return "" }

// Reap does nothing off Linux.
func Reap(runner.Options) error { return nil }

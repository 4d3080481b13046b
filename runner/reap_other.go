//go:build !linux

package runner

// DefaultStateDir is "" off Linux: there is no libcontainer state.
func DefaultStateDir() string { return "" }

// Reap does nothing off Linux.
func Reap(Options) error { return nil }

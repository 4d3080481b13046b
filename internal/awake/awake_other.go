//go:build !linux || !cgo

package awake

// Start starts nothing here: the keeper needs Linux and cgo.
func Start() bool { return false }

// Poke does nothing here.
func Poke() {}

// Spins is always 0 here.
func Spins() uint64 { return 0 }

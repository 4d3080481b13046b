//go:build !linux || !cgo

package awake

// Quiet does nothing here (there is no keeper); resume does nothing.
func Quiet() (resume func()) { return func() {} }

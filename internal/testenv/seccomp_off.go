//go:build !cgo || noseccomp

package testenv

// seccompBuilt: this binary has no libseccomp (no cgo, or -tags noseccomp),
// so every sandbox it starts fails closed.
const seccompBuilt = false

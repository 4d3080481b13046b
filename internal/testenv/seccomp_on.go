//go:build cgo && !noseccomp

package testenv

// seccompBuilt: this binary links libseccomp, as runner/linux/internal/seccomp
// does under the same build constraint, so its sandboxes can start.
const seccompBuilt = true

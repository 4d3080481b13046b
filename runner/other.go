//go:build !linux

package runner

// Init does nothing off Linux: only libcontainer re-executes its binary.
func Init() {}

// New returns ErrUnsupported: this package's backend needs Linux. On macOS
// use package darwin.
func New(Options) (Runner, error) { return nil, ErrUnsupported }

// PrewarmCgroups does nothing off Linux.
func PrewarmCgroups() {}

// networkGuardAvailable: the network guard needs Linux.
func networkGuardAvailable() (bool, string) {
	return false, "cordon's network guard needs Linux"
}

//go:build !linux

package linux

import (
	"github.com/cordon-run/cordon/runner"
)

// Init does nothing off Linux: only libcontainer re-executes its binary.
func Init() {}

// New returns ErrUnsupported: this package's backend needs Linux. On macOS
// use package darwin.
func New(runner.Options) (runner.Runner, error) { return nil, runner.ErrUnsupported }

// Facts are the zero HostFacts off Linux: no network guard, no cgroups.
func Facts() runner.HostFacts { return runner.HostFacts{} }

// PrewarmCgroups does nothing off Linux.
func PrewarmCgroups() {}

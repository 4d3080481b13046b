//go:build !linux

package linux

import (
	"github.com/cordon-run/cordon/runner"
)

// Doctor reports what this host can enforce. Off Linux this package has no
// backend (see package darwin for macOS); the rows of the table of what
// this machine's backend cannot enforce follow.
func Doctor() []runner.Capability {
	caps := []runner.Capability{{Name: "libcontainer backend", OK: false, Detail: runner.ErrUnsupported.Error()}}
	if runner.LocalBackend() == runner.BackendSeatbelt {
		caps = append(caps, runner.Capability{Name: "network allow lists", OK: true, Detail: "enforced, not transparently: " + runner.SeatbeltNetwork})
	}
	return append(caps, runner.LimitationCaps(runner.LocalBackend(), Facts())...)
}

//go:build !linux

package runner

// Doctor reports what this host can enforce. Off Linux this package has no
// backend (see package darwin for macOS); the rows of the table of what
// this machine's backend cannot enforce follow.
func Doctor() []Capability {
	caps := []Capability{{Name: "libcontainer backend", OK: false, Detail: ErrUnsupported.Error()}}
	if LocalBackend() == BackendSeatbelt {
		caps = append(caps, Capability{Name: "network allow lists", OK: true, Detail: "enforced, not transparently: " + SeatbeltNetwork})
	}
	return append(caps, limitationCaps(LocalBackend())...)
}

package runner

import "sync"

// FailureNetworkDenied means the network allow list refused a connection
// or a DNS question of a command that then failed. cordon's own network
// stack decided it, not the command's output.
const FailureNetworkDenied FailureType = "network_denied"

// guardProbe reports whether this host can enforce network allow lists,
// and why not; it is probed once. Tests replace it.
var guardProbe = sync.OnceValues(networkGuardAvailable)

// guardAvailable reports whether backend b enforces network allow lists on
// this host: the Linux backends do where the guard can run.
func guardAvailable(b Backend) bool {
	if b == BackendSeatbelt {
		return false
	}
	ok, _ := guardProbe()
	return ok
}

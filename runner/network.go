package runner

import (
	"sync"

	"github.com/cordon-run/cordon/spec"
)

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

// NetworkEnforcement says how backend b enforces sb's network allow list
// on this host, for explain; "" when sb has none or b refuses it (the
// refusal says why).
func NetworkEnforcement(b Backend, sb *spec.Sandbox) string {
	if sb == nil || !sb.Network.Enabled || len(sb.Network.Allow) == 0 || !guardAvailable(b) {
		return ""
	}
	return "allow list enforced by cordon's own network stack: a tun device in the sandbox's network namespace; " +
		"DNS answered for allowed names only, each TCP connection checked (pinned address, port, TLS server name, HTTP Host) before it is dialled; other UDP and ICMP refused"
}

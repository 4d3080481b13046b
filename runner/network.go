package runner

import (
	"fmt"
	"strings"

	"github.com/cordon-run/cordon/internal/netguard/netevent"
	"github.com/cordon-run/cordon/spec"
)

// FailureNetworkDenied means the network allow list refused a connection
// or a DNS question of a command that then failed. cordon's own network
// stack decided it, not the command's output.
const FailureNetworkDenied FailureType = "network_denied"

// guardAvailable reports whether backend b enforces network allow lists on
// host h: the Linux backends do where the guard can run, macOS's always
// (cordon's proxy, see SeatbeltNetwork).
func guardAvailable(b Backend, h HostFacts) bool {
	if b == BackendSeatbelt {
		return true
	}
	ok, _ := h.NetworkGuard()
	return ok
}

// NetworkEnforcement says how backend b enforces sb's network allow list
// on host h, for explain; "" when sb has none or b refuses it (the
// refusal says why).
func NetworkEnforcement(b Backend, sb *spec.Sandbox, h HostFacts) string {
	if sb == nil || !sb.Network.Enabled || len(sb.Network.Allow) == 0 || !guardAvailable(b, h) {
		return ""
	}
	if b == BackendSeatbelt {
		return SeatbeltNetwork
	}
	return "allow list enforced by cordon's own network stack: a tun device in the sandbox's network namespace; " +
		"DNS answered for allowed names only, each TCP connection checked (pinned address and port before it is dialled; then the TLS server name, " +
		"every HTTP/1.x request's target and Host, read strictly, or an SSH client's first line; anything else refused unless a tcp:// entry opens the port); other UDP and ICMP refused"
}

// SeatbeltNetwork says how macOS enforces an allow list, for explain,
// check and doctor.
const SeatbeltNetwork = "allow list enforced by cordon's HTTP proxy on 127.0.0.1, for programs that honour the proxy variables " +
	"(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NODE_USE_ENV_PROXY, JAVA_TOOL_OPTIONS): each CONNECT and plain HTTP request checked (name and port, " +
	"resolved by cordon and dialled by address; TLS server name; the Host of every HTTP request); the Seatbelt profile allows TCP to the proxy's port only, " +
	"so a program that ignores the proxy variables cannot connect at all (fails closed), DNS is resolved by cordon, not in the sandbox, and UDP is refused"

// NetworkDenials explains a failed command by the network denials cordon
// decided during the run (the Linux guard's, or the macOS proxy's): the first one, which is what the command met first, and how
// many more there were (total, of which denials are the first).
func NetworkDenials(denials []netevent.Event, total int) Explainer {
	return func(_ Outcome, res *Result) bool {
		if len(denials) == 0 {
			return false
		}
		res.FailureType = FailureNetworkDenied
		res.FailureDetail = denialDetail(denials, total)
		return true
	}
}

func denialDetail(denials []netevent.Event, total int) string {
	var b strings.Builder
	b.WriteString(denials[0].Detail)
	if n := max(total, len(denials)) - 1; n > 0 {
		fmt.Fprintf(&b, " (and %d more network denial", n)
		if n > 1 {
			b.WriteString("s")
		}
		b.WriteString(")")
	}
	return b.String()
}

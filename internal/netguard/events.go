package netguard

import (
	"context"
	"net"

	"github.com/cordon-run/cordon/internal/netguard/netevent"
)

// Decisions of an Event.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Where the name of an Event came from.
const (
	FromDNS  = "dns"
	FromSNI  = "sni"
	FromHTTP = "http_host"
	FromAddr = "address"
)

// Reasons of a denial.
const (
	ReasonNotAllowed    = "not_in_allow_list"
	ReasonPort          = "port_not_allowed"
	ReasonAddress       = "ip_literal_not_allowed"
	ReasonPrivate       = "private_address"
	ReasonSNI           = "sni_mismatch"
	ReasonNoSNI         = "tls_without_sni"
	ReasonHTTPHost      = "http_host_denied"
	ReasonHTTPFraming   = "http_ambiguous_length"
	ReasonUDP           = "udp_blocked"
	ReasonICMP          = "icmp_blocked"
	ReasonDNSRefused    = "dns_refused"
	ReasonUpstream      = "upstream_failed"
	ReasonDNSUnanswered = "dns_type_unsupported"
	ReasonTooMany       = "too_many_connections"
	// ReasonHTTPMalformed: an HTTP request the guard does not parse
	// strictly (RFC 9112), after a first one it did.
	ReasonHTTPMalformed = "http_request_malformed"
	// ReasonProtocol: a connection by name whose first bytes are neither
	// a TLS ClientHello, an HTTP/1.x request nor an SSH identification
	// line, on a port no tcp:// rule opens.
	ReasonProtocol = "protocol_not_read"
)

// Event is one decision of the guard; it lives in the leaf package
// netevent so the runner contract can carry it without linking the guard.
type Event = netevent.Event

// Resolver resolves allowed names (netevent.Resolver).
type Resolver = netevent.Resolver

// Config is what a Guard enforces and how it reaches the outside.
type Config struct {
	// Allow is the allow list, in the spec's canonical form.
	Allow []string
	// Resolver resolves allowed names (nil: the host's, /etc/hosts
	// included).
	Resolver Resolver
	// Dial dials an allowed destination, always an address (nil: a
	// net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// HostsFile, when set, is a hosts(5) file the sandbox's resolver reads
	// (the host's /etc/hosts, which it sees read-only): its allowed names
	// are pinned from the start, so a command that resolves a name there
	// without asking DNS can connect as if it had.
	HostsFile string
	// OnEvent, when set, is called for every decision, in order, from the
	// guard's goroutines.
	OnEvent func(Event)
}

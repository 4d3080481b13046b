package netguard

import (
	"context"
	"net"
	"net/netip"
	"time"
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

// Event is one decision of the guard: a DNS question, a TCP connection or
// a refused datagram. The audit log has one line per event.
type Event struct {
	// Time is when the decision was made: for a connection, when it was
	// opened (its event is recorded when it ends, with its bytes).
	Time time.Time `json:"time"`
	// Proto is dns, tcp, udp or icmp.
	Proto string `json:"proto"`
	// Host is the name decided on ("" for an address alone).
	Host string `json:"host,omitempty"`
	// HostFrom says where Host came from: dns, sni, http_host or address.
	HostFrom string `json:"host_from,omitempty"`
	// Addr and Port are the destination.
	Addr string `json:"addr,omitempty"`
	Port uint16 `json:"port,omitempty"`
	// Rule is the allow entry that admitted it.
	Rule     string `json:"rule,omitempty"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Detail is the sentence for a denial: what, and what is allowed.
	Detail   string `json:"detail,omitempty"`
	BytesOut int64  `json:"bytes_out,omitempty"`
	BytesIn  int64  `json:"bytes_in,omitempty"`
	// Count, when set, is how many decisions of this kind (Proto,
	// Decision, Reason) this one event stands for: those past the first
	// few thousand of a run, which are counted, not listed.
	Count int64 `json:"count,omitempty"`
}

// Resolver resolves allowed names; *net.Resolver is one. It must not be
// asked for names the allow list does not admit, and is not.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

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

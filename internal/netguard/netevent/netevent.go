// Package netevent holds what the network guard reports and needs that
// the runner contract and the audit log carry: an Event and the Resolver
// interface. It imports only the standard library, so they do not link
// the guard's TCP/IP stack.
package netevent

import (
	"context"
	"net/netip"
	"time"
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

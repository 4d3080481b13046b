package netguard

import (
	"net"
	"net/netip"
)

// tcpConn is one connection from the sandbox.
type tcpConn struct {
	p    *policy
	dst  netip.Addr
	port uint16
	// names are the pinned names the destination may be reached as; rule
	// is set when an address rule admits it.
	names    []string
	addrRule Rule
	ev       Event
	downConn net.Conn
}

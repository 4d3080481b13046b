// Package netguard enforces a sandbox's network allow list from outside the
// sandbox: the sandbox's network namespace has one tun device, whose packets
// a userspace TCP/IP stack (gVisor's tcpip) in cordon's own process
// terminates. Every DNS query is answered by cordon, every TCP connection is
// decided by cordon before it is dialled, and everything else is refused.
// Nothing of cordon's runs inside the sandbox.
package netguard

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of an allow list, as the spec's canonical form writes
// it: host[:port], *.host[:port], a.b.c.d[:port] or [v6][:port], or
// tcp://host:port and tcp://*.host:port for a port that carries a protocol
// the guard does not read.
type Rule struct {
	// Text is the entry as written in the allow list.
	Text string
	// Host is a lower-case name without a trailing dot; for a wildcard rule
	// it is the suffix without "*.". Empty for an address rule.
	Host string
	// Wildcard: the rule matches subdomains of Host only, not Host itself.
	Wildcard bool
	// Addr is the address of an address rule.
	Addr netip.Addr
	// Port is the allowed TCP port; 0 allows every port.
	Port uint16
	// Raw: a tcp:// rule. A connection to its name and port is not read
	// (as one to an allowed address is not): its bytes pass as sent. Any
	// site that shares the name's address can be reached through it.
	Raw bool
}

// ParseRules reads an allow list in the spec's canonical form.
func ParseRules(allow []string) ([]Rule, error) {
	out := make([]Rule, 0, len(allow))
	for _, e := range allow {
		r, err := parseRule(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRule(e string) (Rule, error) {
	r := Rule{Text: e}
	if rest, ok := strings.CutPrefix(e, "tcp://"); ok {
		r.Raw, e = true, rest
	}
	host, port := e, ""
	if strings.HasPrefix(e, "[") {
		end := strings.IndexByte(e, ']')
		if end < 0 {
			return r, fmt.Errorf("allow entry %q: unclosed '['", e)
		}
		host, port = e[1:end], strings.TrimPrefix(e[end+1:], ":")
	} else if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host, port = e[:i], e[i+1:]
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return r, fmt.Errorf("allow entry %q: the port must be a number from 1 to 65535", e)
		}
		r.Port = uint16(n)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return r, fmt.Errorf("allow entry %q: an address with a zone cannot be allowed", e)
		}
		if r.Raw {
			return r, fmt.Errorf("allow entry %q: a connection to an allowed address is never read; write %s without tcp://", r.Text, e)
		}
		r.Addr = a.Unmap()
		return r, nil
	}
	if r.Raw && r.Port == 0 {
		return r, fmt.Errorf("allow entry %q: a tcp:// rule needs a port, as in tcp://%s:22", r.Text, e)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard, host = true, rest
	}
	if host == "" || strings.ContainsAny(host, "*\x00/ :[]") {
		return r, fmt.Errorf("allow entry %q: not a host name", e)
	}
	r.Host = host
	return r, nil
}

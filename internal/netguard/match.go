package netguard

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// matchName reports whether the rule admits the (normalized) name, on any
// port.
func (r Rule) matchName(name string) bool {
	if r.Host == "" {
		return false
	}
	if r.Wildcard {
		return strings.HasSuffix(name, "."+r.Host)
	}
	return name == r.Host
}

// portOK reports whether the rule admits port.
func (r Rule) portOK(port uint16) bool { return r.Port == 0 || r.Port == port }

// normalizeName lower-cases a DNS or SNI name and drops one trailing dot;
// it returns "" for a name that is not plain letters, digits, hyphens,
// underscores and dots (no NUL, no CRLF, no escapes).
func normalizeName(n string) string {
	n = strings.ToLower(strings.TrimSuffix(n, "."))
	if n == "" || len(n) > 253 {
		return ""
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return ""
		}
	}
	return n
}

// neverByWildcard reports addresses a wildcard rule never yields:
// loopback, link-local, unspecified, multicast and the cloud metadata
// addresses. A rule naming the exact host honours what the resolver
// returns.
func neverByWildcard(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case a.IsLoopback(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsMulticast(),
		a.IsUnspecified(), a.IsInterfaceLocalMulticast():
		return true
	}
	for _, m := range metadataAddrs {
		if a == m {
			return true
		}
	}
	return false
}

// metadataAddrs are the cloud metadata services reachable without
// link-local addressing.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
}

// list renders the allow list for a message.
func list(rules []Rule) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range rules {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Text)
	}
	b.WriteByte(']')
	return b.String()
}

// hostPort renders a destination as host:port, bracketing IPv6.
func hostPort(host string, port uint16) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// nameDecision decides a name on a port (port 0: the name alone, as for a
// DNS question). It returns the rule that admits it, or a sentence that
// says why not and what is allowed.
func nameDecision(rules []Rule, name string, port uint16) (Rule, string) {
	var portOnly []string
	for _, r := range rules {
		if !r.matchName(name) {
			continue
		}
		if port == 0 || r.portOK(port) {
			return r, ""
		}
		portOnly = append(portOnly, strconv.Itoa(int(r.Port)))
	}
	what := name
	if port != 0 {
		what = hostPort(name, port)
	}
	if len(portOnly) > 0 {
		return Rule{}, fmt.Sprintf("%s is not allowed: %s is allowed on port %s only", what, name, strings.Join(portOnly, ", "))
	}
	for _, r := range rules {
		if r.Wildcard && r.Host == name {
			return Rule{}, fmt.Sprintf("%s is not allowed: %q matches subdomains only, not %s; add %q", what, r.Text, name, name)
		}
	}
	return Rule{}, fmt.Sprintf("%s is not in the allow list %s", what, list(rules))
}

// addrRule returns the address rule that admits a on port, if any.
func addrRule(rules []Rule, a netip.Addr, port uint16) (Rule, bool) {
	a = a.Unmap()
	for _, r := range rules {
		if r.Host == "" && r.Addr == a && r.portOK(port) {
			return r, true
		}
	}
	return Rule{}, false
}

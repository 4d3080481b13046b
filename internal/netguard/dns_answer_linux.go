package netguard

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsTTL is the TTL of every answer: short, so that a client asks again
// (and the guard pins again) rather than caching across runs.
const dnsTTL = 30

// answer decides one DNS query and returns the wire response, or nil for
// a message that is not a query. Allowed names are resolved by the host's
// resolver and the addresses pinned for the connection check; every other
// name gets REFUSED and is never sent anywhere.
func (p *policy) answer(query []byte) []byte {
	var parser dnsmessage.Parser
	h, err := parser.Start(query)
	if err != nil || h.Response {
		return nil
	}
	qs, err := parser.AllQuestions()
	resp := dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}}
	if err != nil || len(qs) != 1 || h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeFormatError
		return pack(resp)
	}
	q := qs[0]
	resp.Questions = qs
	raw := q.Name.String()
	name := normalizeName(raw)
	ev := Event{Proto: "dns", Host: strings.TrimSuffix(raw, "."), HostFrom: FromDNS, Port: 53}
	r, why := Rule{}, ""
	if name == "" {
		why = fmt.Sprintf("DNS name %q is not a host name", raw)
	} else {
		ev.Host = name
		r, why = nameDecision(p.rules, name, 0)
	}
	if r.Text == "" || q.Class != dnsmessage.ClassINET {
		if why == "" {
			why = fmt.Sprintf("DNS class %v is not answered", q.Class)
		}
		resp.RCode = dnsmessage.RCodeRefused
		ev.Decision, ev.Reason, ev.Detail = Deny, ReasonDNSRefused, "DNS query for "+why
		p.record(ev)
		return pack(resp)
	}
	ev.Rule, ev.Decision = r.Text, Allow
	if q.Type != dnsmessage.TypeA && q.Type != dnsmessage.TypeAAAA {
		// HTTPS and SVCB (which carry ECH keys), TXT, MX and the rest:
		// an empty answer, so clients fall back to A and AAAA.
		ev.Reason = ReasonDNSUnanswered
		p.record(ev)
		return pack(resp)
	}
	addrs, err := p.lookup(name, q.Type == dnsmessage.TypeAAAA)
	if err != nil {
		resp.RCode = dnsmessage.RCodeServerFailure
		ev.Decision, ev.Reason, ev.Detail = Deny, ReasonUpstream, fmt.Sprintf("resolving %s: %v", name, err)
		p.record(ev)
		return pack(resp)
	}
	var kept []string
	for _, a := range addrs {
		a = a.Unmap()
		if r.Wildcard && p.neverByWildcard(a) {
			continue
		}
		p.addPin(a, name, r)
		kept = append(kept, a.String())
		resp.Answers = append(resp.Answers, record(q.Name, a))
	}
	if len(kept) == 0 && len(addrs) > 0 {
		ev.Decision, ev.Reason = Deny, ReasonPrivate
		ev.Detail = fmt.Sprintf("%s resolved only to loopback, link-local, metadata or this machine's own addresses, which the wildcard rule %q never yields; add %q to allow it", name, r.Text, name)
		p.record(ev)
		return pack(resp)
	}
	ev.Addr = strings.Join(kept, ",")
	p.record(ev)
	return pack(resp)
}

func record(name dnsmessage.Name, a netip.Addr) dnsmessage.Resource {
	h := dnsmessage.ResourceHeader{Name: name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
	if a.Is4() {
		h.Type = dnsmessage.TypeA
		return dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: a.As4()}}
	}
	h.Type = dnsmessage.TypeAAAA
	return dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}}
}

func pack(m dnsmessage.Message) []byte {
	b, err := m.Pack()
	if err != nil {
		m.Answers = nil
		m.RCode = dnsmessage.RCodeServerFailure
		b, _ = m.Pack()
	}
	return b
}

// truncated is the answer to a UDP query whose response does not fit: TC
// set, so the client asks again over TCP.
func truncated(query []byte) []byte {
	var parser dnsmessage.Parser
	h, err := parser.Start(query)
	if err != nil {
		return nil
	}
	qs, _ := parser.AllQuestions()
	return pack(dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, Truncated: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}, Questions: qs})
}

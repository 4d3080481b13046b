package netguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// pin is what the guard answered for one address: the names that resolved
// to it, each with the rule that admitted the name.
type pin struct {
	names map[string]Rule
}

// policy is the decision state shared by the DNS and TCP paths.
type policy struct {
	rules    []Rule
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	onEvent  func(Event)

	mu sync.Mutex
	// pins: address → names the guard's DNS answered with it. Pins are
	// kept for the life of the guard: a connection is only ever dialled
	// to the address it was made to, so there is nothing to re-resolve.
	pins map[netip.Addr]*pin
	// local are this machine's own addresses (see neverByWildcard).
	local   map[netip.Addr]bool
	denials []Event
	events  int
	// denied counts every denial, kept or not; itemised counts the
	// events handed to OnEvent since the last Flush, and over the rest.
	denied   int
	itemised int
	over     map[tallyKey]int64
}

// maxEvents bounds the decisions a guard hands to OnEvent one by one
// between two Flushes (a run; a session's exec): past it, decisions are
// counted by kind and Flush reports the counts. A command that floods
// refused datagrams, SYNs or queries would otherwise grow cordon's memory,
// the report and the audit log without bound.
const maxEvents = 4096

// maxDenials bounds the denials Denials keeps (the first ones, which
// explain a failure); DenialCount counts them all.
const maxDenials = 64

// tallyKey is what the decisions past maxEvents are counted by.
type tallyKey struct{ proto, decision, reason string }

func newPolicy(cfg Config) (*policy, error) {
	rules, err := ParseRules(cfg.Allow)
	if err != nil {
		return nil, err
	}
	p := &policy{rules: rules, resolver: cfg.Resolver, dial: cfg.Dial, onEvent: cfg.OnEvent, pins: map[netip.Addr]*pin{}, local: localAddrs()}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if cfg.HostsFile != "" {
		p.pinHosts(cfg.HostsFile)
	}
	if p.dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		p.dial = d.DialContext
	}
	return p, nil
}

// record keeps a decision and hands it to OnEvent.
func (p *policy) record(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	p.mu.Lock()
	p.events++
	if e.Decision == Deny && e.Reason != ReasonUpstream {
		p.denied++
		if len(p.denials) < maxDenials {
			p.denials = append(p.denials, e)
		}
	}
	if p.itemised >= maxEvents {
		if p.over == nil {
			p.over = map[tallyKey]int64{}
		}
		p.over[tallyKey{e.Proto, e.Decision, e.Reason}]++
		p.mu.Unlock()
		return
	}
	p.itemised++
	p.mu.Unlock()
	if p.onEvent != nil {
		p.onEvent(e)
	}
}

// Flush hands OnEvent one event per kind of decision counted past
// maxEvents since the last Flush, with Count set, and starts a new budget
// of maxEvents. Close flushes.
func (p *policy) Flush() {
	p.mu.Lock()
	over := p.over
	p.over, p.itemised = nil, 0
	p.mu.Unlock()
	keys := make([]tallyKey, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tallyKey) int {
		return cmp.Or(cmp.Compare(a.proto, b.proto), cmp.Compare(a.decision, b.decision), cmp.Compare(a.reason, b.reason))
	})
	for _, k := range keys {
		e := Event{Time: time.Now().UTC(), Proto: k.proto, Decision: k.decision, Reason: k.reason, Count: over[k],
			Detail: fmt.Sprintf("%d more %s %s decisions (%s), past the first %d, were counted, not listed one by one", over[k], k.proto, k.decision, cmp.Or(k.reason, "allowed"), maxEvents)}
		if p.onEvent != nil {
			p.onEvent(e)
		}
	}
}

// DenialCount is the number of denials so far, including those Denials
// no longer keeps.
func (p *policy) DenialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.denied
}

// addPin records that name (admitted by r) resolved to a.
func (p *policy) addPin(a netip.Addr, name string, r Rule) {
	a = a.Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	pn := p.pins[a]
	if pn == nil {
		pn = &pin{names: map[string]Rule{}}
		p.pins[a] = pn
	}
	pn.names[name] = r
}

// Denials returns the first denials (at most maxDenials), in order.
func (p *policy) Denials() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.denials...)
}

// pinHosts pins the allowed names of a hosts(5) file, with the same rule
// as DNS answers: a wildcard never yields loopback, link-local or metadata
// addresses. A file that cannot be read pins nothing.
func (p *policy) pinHosts(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || a.Zone() != "" {
			continue
		}
		for _, n := range f[1:] {
			name := normalizeName(n)
			if name == "" {
				continue
			}
			if r, _ := nameDecision(p.rules, name, 0); r.Text != "" && !(r.Wildcard && p.neverByWildcard(a)) {
				p.addPin(a, name, r)
			}
		}
	}
}

// neverByWildcard reports the addresses a wildcard rule never yields:
// loopback, link-local, metadata (see neverByWildcard), and every address
// of this machine's own interfaces. cordon dials from the host, where a
// service listening on all addresses answers at each of them as it does
// on loopback.
func (p *policy) neverByWildcard(a netip.Addr) bool {
	return neverByWildcard(a) || p.local[a.Unmap()]
}

// localAddrs returns the addresses of the interfaces of cordon's network
// namespace (the host's).
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// lookup resolves an allowed name with the host's resolver.
func (p *policy) lookup(name string, v6 bool) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	network := "ip4"
	if v6 {
		network = "ip6"
	}
	addrs, err := p.resolver.LookupNetIP(ctx, network, name)
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		return nil, nil
	}
	return addrs, err
}

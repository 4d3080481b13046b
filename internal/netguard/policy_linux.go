package netguard

import (
	"context"
	"net"
	"net/netip"
	"os"
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
	pins    map[netip.Addr]*pin
	denials []Event
	events  int
}

func newPolicy(cfg Config) (*policy, error) {
	rules, err := ParseRules(cfg.Allow)
	if err != nil {
		return nil, err
	}
	p := &policy{rules: rules, resolver: cfg.Resolver, dial: cfg.Dial, onEvent: cfg.OnEvent, pins: map[netip.Addr]*pin{}}
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
		p.denials = append(p.denials, e)
	}
	p.mu.Unlock()
	if p.onEvent != nil {
		p.onEvent(e)
	}
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

// pinned returns the names pinned to a that an allow rule admits on port,
// and whether any name is pinned to a at all.
func (p *policy) pinned(a netip.Addr, port uint16) (names []string, any bool) {
	a = a.Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	pn := p.pins[a]
	if pn == nil {
		return nil, false
	}
	for n := range pn.names {
		if r, _ := nameDecision(p.rules, n, port); r.Text != "" {
			names = append(names, n)
		}
	}
	return names, true
}

// Denials returns the denials so far, in order.
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
			if r, _ := nameDecision(p.rules, name, 0); r.Text != "" && !(r.Wildcard && neverByWildcard(a)) {
				p.addPin(a, name, r)
			}
		}
	}
}

//go:build darwin

package darwin

import (
	"fmt"
	"sync"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/spec"
)

// netEvents keeps the decisions of a run's proxy, for the run's result
// and its audit record.
type netEvents struct {
	mu  sync.Mutex
	evs []netguard.Event
}

func (l *netEvents) add(e netguard.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *netEvents) all() []netguard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netguard.Event(nil), l.evs...)
}

// startProxy starts the proxy of a sandbox with an allow list (nil for
// one without): Seatbelt cannot filter by host, so the profile lets the
// command reach this proxy only, and the proxy decides.
func startProxy(sb *spec.Sandbox, log *netEvents) (*netguard.Proxy, error) {
	if !sb.Network.Enabled || len(sb.Network.Allow) == 0 {
		return nil, nil
	}
	p, err := netguard.NewProxy(netguard.Config{Allow: sb.Network.Allow, OnEvent: log.add})
	if err != nil {
		return nil, fmt.Errorf("network allow list: %w", err)
	}
	return p, nil
}

// useProxy points the profile at the run's proxy and returns the
// variables that point the command at it: its own, and ssh's
// ProxyCommand when SetProxyConnect named a cordon executable.
func useProxy(opts *ProfileOptions, p *netguard.Proxy) []string {
	opts.ProxyPort = p.Port()
	env := p.Env()
	if pc := proxyConnectPath(); pc != "" {
		opts.ProxyConnect = pc
		env = append(env, sshProxyEnv(pc))
	}
	return env
}

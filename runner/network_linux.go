package runner

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/spec"
)

// network starts the network guard of a sandbox with an allow list: a tun
// device in the sandbox's network namespace, made before the command
// starts, and cordon's own TCP/IP stack over it (package netguard).
func (run *linuxRun) network() error {
	if run.eff == nil || !run.eff.Network.Enabled || len(run.eff.Network.Allow) == 0 {
		return nil
	}
	pid, err := run.lp.Pid()
	if err != nil {
		return fmt.Errorf("network allow list: the sandbox's init: %w", err)
	}
	rules, err := netguard.ParseRules(run.eff.Network.Allow)
	if err != nil {
		return fmt.Errorf("network allow list: %w", err)
	}
	dev, err := netguard.TunFor(pid, netguard.LoopbackResolvers("/etc/resolv.conf"), netguard.LoopbackForwards(rules))
	if err != nil {
		return fmt.Errorf("network allow list: %w", err)
	}
	run.netEvents = &eventLog{}
	cfg := netguard.Config{Allow: run.eff.Network.Allow, Resolver: run.r.resolver, OnEvent: run.netEvents.add}
	if run.eff.System.Kind == spec.SystemHost {
		// The sandbox reads the host's /etc/hosts (read-only): its
		// allowed names work without DNS. A rootfs's own hosts file is
		// not trusted to pin anything.
		cfg.HostsFile = "/etc/hosts"
	}
	g, err := netguard.Start(dev, cfg)
	if err != nil {
		return fmt.Errorf("network allow list: %w", err)
	}
	run.guard = g
	run.onEnd(func() { g.Close() })
	return nil
}

// eventLog keeps the guard's events of one run.
type eventLog struct {
	mu  sync.Mutex
	evs []netguard.Event
	// reported is how many of evs a session's execs have reported: the
	// next exec to end reports evs[reported:], so an event recorded
	// between two execs, or while several run, is in exactly one result.
	reported int
}

func (l *eventLog) add(e netguard.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

// take returns the events no exec has reported yet and marks them
// reported.
func (l *eventLog) take() []netguard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh := append([]netguard.Event(nil), l.evs[l.reported:]...)
	l.reported = len(l.evs)
	return fresh
}

// since returns the events recorded from index i on.
func (l *eventLog) since(i int) []netguard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i > len(l.evs) {
		return nil
	}
	return append([]netguard.Event(nil), l.evs[i:]...)
}

func (run *linuxRun) guardEvents() []netguard.Event {
	if run.netEvents == nil {
		return nil
	}
	run.netEvents.mu.Lock()
	defer run.netEvents.mu.Unlock()
	return append([]netguard.Event(nil), run.netEvents.evs...)
}

// netMark is where the events of a session's exec begin: an index into
// the guard's events and a time.
type netMark struct {
	i int
	t time.Time
}

func (run *linuxRun) netMark() netMark {
	if run.guard != nil {
		// A new budget of listed decisions for this exec.
		run.guard.Flush()
	}
	m := netMark{t: time.Now()}
	if run.netEvents != nil {
		run.netEvents.mu.Lock()
		m.i = len(run.netEvents.evs)
		run.netEvents.mu.Unlock()
	}
	return m
}

// netSince gives a session exec's result the guard's events no exec has
// reported yet: each event is in exactly one result and one audit line,
// that of the first exec to end after it was recorded. A connection is
// recorded when it ends, which may be after its exec ended (even after
// the next one began): it is reported with a later exec, and never types
// it. A failure nothing else explained is typed network_denied when one
// of the decisions made since this exec began is a denial, whichever
// exec reports it.
func (run *linuxRun) netSince(res *Result, mark netMark) {
	if run.guard != nil {
		// The decisions counted past the budget, as events of their own.
		run.guard.Flush()
	}
	if run.netEvents == nil {
		return
	}
	if fresh := run.netEvents.take(); len(fresh) > 0 {
		res.Network = fresh
	}
	var denials []netguard.Event
	total := 0
	for _, e := range run.netEvents.since(mark.i) {
		if e.Decision == netguard.Deny && e.Reason != netguard.ReasonUpstream && !e.Time.Before(mark.t) {
			denials = append(denials, e)
			total += int(max(1, e.Count))
		}
	}
	if res.FailureType == FailureProcessError && res.ExitCode != 0 && len(denials) > 0 {
		networkDenials(denials, total)(Outcome{}, res)
	}
}

// UnreportedNetwork implements NetworkTail: after Close, the guard (closed
// with the sandbox) has recorded every decision.
func (s *linuxSession) UnreportedNetwork() []netguard.Event {
	if s.run == nil || s.run.netEvents == nil {
		return nil
	}
	return s.run.netEvents.take()
}

// guardDenials returns the guard's first denials and how many there were.
func (run *linuxRun) guardDenials() ([]netguard.Event, int) {
	if run.guard == nil {
		return nil, 0
	}
	return run.guard.Denials(), run.guard.DenialCount()
}

// networkGuardAvailable reports whether this host can enforce a network
// allow list: cordon makes a tun device in each sandbox, so /dev/net/tun
// must open. It returns the reason when it cannot.
func networkGuardAvailable() (bool, string) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Sprintf("/dev/net/tun cannot be opened (%v); inside a container, pass the device (docker run --device /dev/net/tun)", err)
	}
	unix.Close(fd)
	return true, ""
}

// networkDenials explains a failed command by the guard's denials during
// the run: the first one, which is what the command met first, and how
// many more there were (total, of which denials are the first).
func networkDenials(denials []netguard.Event, total int) Explainer {
	return func(_ Outcome, res *Result) bool {
		if len(denials) == 0 {
			return false
		}
		res.FailureType = FailureNetworkDenied
		res.FailureDetail = denialDetail(denials, total)
		return true
	}
}

func denialDetail(denials []netguard.Event, total int) string {
	var b strings.Builder
	b.WriteString(denials[0].Detail)
	if n := max(total, len(denials)) - 1; n > 0 {
		fmt.Fprintf(&b, " (and %d more network denial", n)
		if n > 1 {
			b.WriteString("s")
		}
		b.WriteString(")")
	}
	return b.String()
}

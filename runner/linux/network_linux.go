package linux

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// prepareNetwork starts the network guard of a sandbox with an allow list
// while the sandbox is made, so that it adds as little as possible to the
// start of a run: the guard's policy and stack (package netguard) need no
// sandbox, and as root cordon makes the sandbox's network namespace
// itself, for the sandbox to join, and its tun device and sockets in it
// meanwhile. Rootless, the namespace belongs to the sandbox's user
// namespace, which exists only once the init does: network makes the
// device then. Either way the command starts only after network has the
// guard attached (see network). A list that does not parse fails the run
// here, before anything starts.
func (run *linuxRun) prepareNetwork() error {
	if run.eff == nil || !run.eff.Network.Enabled || len(run.eff.Network.Allow) == 0 {
		return nil
	}
	rules, err := netguard.ParseRules(run.eff.Network.Allow)
	if err != nil {
		return fmt.Errorf("network allow list: %w", err)
	}
	run.netRules = rules
	run.netEvents = &eventLog{}
	cfg := netguard.Config{Allow: run.eff.Network.Allow, Resolver: run.r.resolver, OnEvent: run.netEvents.add}
	if run.eff.System.Kind == spec.SystemHost {
		// The sandbox reads the host's /etc/hosts (read-only): its
		// allowed names work without DNS. A rootfs's own hosts file is
		// not trusted to pin anything.
		cfg.HostsFile = "/etc/hosts"
	}
	var netns *os.File
	if !run.r.rootless && !run.config.Namespaces.Contains(configs.NEWUSER) && run.config.Namespaces.Contains(configs.NEWNET) &&
		run.config.Namespaces.PathOf(configs.NEWNET) == "" {
		if netns, err = netguard.NewNamespace(); err != nil {
			return fmt.Errorf("network allow list: %w", err)
		}
		run.onEnd(func() { netns.Close() })
		// The init joins it (nsexec opens the path while cordon
		// holds the descriptor) instead of making one.
		run.config.Namespaces.Remove(configs.NEWNET)
		run.config.Namespaces.Add(configs.NEWNET, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), netns.Fd()))
		run.netPremade = true
	}
	ready := make(chan preparedGuard, 1)
	go func() {
		g, err := netguard.New(cfg)
		if err != nil || netns == nil {
			ready <- preparedGuard{g: g, err: err}
			return
		}
		dev, err := netguard.TunIn(netns, netguard.LoopbackResolvers("/etc/resolv.conf"), netguard.LoopbackForwards(rules))
		if err == nil {
			err = g.Attach(dev)
		}
		ready <- preparedGuard{g: g, err: err, attached: err == nil}
	}()
	run.netReady = ready
	// A run that ends before network took the guard closes it.
	run.onEnd(func() {
		if run.netReady != nil {
			if p := <-run.netReady; p.attached {
				p.g.Close()
			}
		}
	})
	return nil
}

// preparedGuard is what prepareNetwork's goroutine made: the guard, and
// whether it has its device already.
type preparedGuard struct {
	g        *netguard.Guard
	err      error
	attached bool
}

// network has the network guard of a sandbox with an allow list attached
// to its tun device before the command starts (the device, its routes and
// the DNS sockets exist in the sandbox's network namespace, and the
// guard's stack reads the device), so every packet the command sends is
// the guard's from the first. Rootless, it makes the device now (see
// prepareNetwork).
func (run *linuxRun) network() error {
	if run.netReady == nil {
		return nil
	}
	var dev *netguard.Device
	if !run.netPremade {
		pid, err := run.lp.Pid()
		if err != nil {
			return fmt.Errorf("network allow list: the sandbox's init: %w", err)
		}
		if dev, err = netguard.TunFor(pid, netguard.LoopbackResolvers("/etc/resolv.conf"), netguard.LoopbackForwards(run.netRules)); err != nil {
			return fmt.Errorf("network allow list: %w", err)
		}
	}
	p := <-run.netReady
	run.netReady = nil
	if p.err != nil {
		if dev != nil {
			dev.Close()
		}
		return fmt.Errorf("network allow list: %w", p.err)
	}
	if !p.attached {
		if err := p.g.Attach(dev); err != nil {
			return fmt.Errorf("network allow list: %w", err)
		}
	}
	run.guard = p.g
	run.onEnd(func() { p.g.Close() })
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
func (run *linuxRun) netSince(res *runner.Result, mark netMark) {
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
	if res.FailureType == runner.FailureProcessError && res.ExitCode != 0 && len(denials) > 0 {
		runner.NetworkDenials(denials, total)(runner.Outcome{}, res)
	}
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
		var st unix.Stat_t
		mode := uint32(0)
		if unix.Stat("/dev/net/tun", &st) == nil {
			mode = st.Mode & 0o777
		}
		return false, tunFix(err, mode, os.Geteuid())
	}
	unix.Close(fd)
	return true, ""
}

// tunFix says why /dev/net/tun did not open (err; mode is its permission
// bits, 0 when unknown) and the way out that works on this host.
func tunFix(err error, mode uint32, uid int) string {
	msg := fmt.Sprintf("/dev/net/tun cannot be opened (%v)", err)
	switch {
	case errors.Is(err, unix.ENOENT):
		return msg + "; load the tun module (as root: modprobe tun), or inside a container pass the device (docker run --device /dev/net/tun)"
	case (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) && uid != 0:
		return msg + fmt.Sprintf("; it is mode %04o here: make it 0666, as most distributions ship it (as root: chmod 0666 /dev/net/tun, "+
			"and for every boot a udev rule: KERNEL==\"tun\", MODE=\"0666\" in /etc/udev/rules.d/60-tun.rules), or run cordon as root", mode)
	}
	return msg + "; inside a container, pass the device (docker run --device /dev/net/tun)"
}

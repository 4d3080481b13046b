package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard"
)

// The supervisor is off the container's start path. create itself (a Go
// process already running) takes what must exist before the container's
// command may run: it accepts the init's seccomp descriptor, makes the
// network guard's tun device in the container's namespace (with an allow
// list), lets the init's exec FIFO open through (initfifo_linux.go) and
// hands the descriptor, a pidfd of the init, the device and the listener
// to the supervisor over the handoff socket (the supervisor's fd 3); then
// it returns, while the supervisor is still starting. Until the
// supervisor serves them, the container's notified calls wait in the
// kernel (the descriptor is held in flight, then by the supervisor) and
// its packets wait in the tun device's queue, the only route out of its
// namespace: nothing passes unguarded. A supervisor that dies drops
// them: the calls fail (ENOSYS) and the device, with its routes, is gone.
//
// A container with an allow list and no deny, protect or audit has no
// broker and so no listener and no notified call to hold its init by:
// create makes the device once libcontainer's Start has returned (the
// init then waits at its exec FIFO, which only start, or run after the
// handoff, opens), hands over a pidfd of the init and the device only,
// and only then starts the supervisor (guardonly_linux.go).

// handoff is the message create sends with its descriptors: a pidfd of
// the init, then (Broker) the listener and the init's seccomp descriptor,
// then (with an allow list) the tun device, DNS sockets and forwards.
type handoff struct {
	Pid     int  `json:"pid"`
	Broker  bool `json:"broker,omitempty"`
	Tun     bool `json:"tun,omitempty"`
	DNS     int  `json:"dns"`
	Forward int  `json:"forward"`
}

// handed is what the supervisor receives (l nil and seccompFD -1: no
// broker).
type handed struct {
	l         *net.UnixListener
	seccompFD int
	pidfd     int
	dev       *netguard.Device
}

// gate is create's side: with a broker it runs beside libcontainer's
// Start; without one (l nil) it runs once Start has returned.
type gate struct {
	cfg  brokerConfig
	l    *net.UnixListener // nil: the guard only
	hand *os.File          // create's end of the handoff socket
	// peer and late, without a broker: the supervisor's end, and what
	// starts the supervisor with it once the container is handed over.
	peer *os.File
	late func(peer *os.File) error
	done chan error
	// early is the guard's device made ahead (earlytun_linux.go).
	early earlyOf
}

func newGate(cfg brokerConfig, l *net.UnixListener, hand *os.File) *gate {
	g := &gate{cfg: cfg, l: l, hand: hand, done: make(chan error, 1)}
	if l != nil {
		go func() { g.done <- g.pass() }()
	}
	return g
}

// wait returns once the supervisor has what it serves, or the reason it
// never will (the container must then not run). pid is the init's, which
// Start has started.
func (g *gate) wait(pid int) error {
	if g.l == nil {
		return g.passGuard(pid)
	}
	return <-g.done
}

// cancel ends a gate whose container failed before its init sent the
// descriptor (or, without a broker, before it was handed over).
func (g *gate) cancel() {
	if g.l == nil {
		g.hand.Close()
		g.closePeer()
		g.dropEarly()
		return
	}
	g.l.Close()
	<-g.done
}

// passGuard hands over the init pid of a container with the guard only:
// a pidfd of it and the guard's device in its namespace.
func (g *gate) passGuard(pid int) error {
	defer g.hand.Close()
	defer g.closePeer()
	defer g.dropEarly()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("cordon-oci supervisor: watch the init %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	dev, err := g.tunOf(pid)
	if err != nil {
		return fmt.Errorf("cordon-oci supervisor: %w", err)
	}
	defer dev.Close()
	if err := g.send(handoff{Pid: pid}, []int{pidfd}, dev); err != nil {
		return err
	}
	if g.late != nil {
		return g.late(g.peer)
	}
	return nil
}

func (g *gate) closePeer() {
	if g.peer != nil {
		g.peer.Close()
	}
}

func (g *gate) pass() error {
	defer g.l.Close()
	defer g.hand.Close()
	defer g.dropEarly()
	c, err := g.l.AcceptUnix()
	if err != nil {
		return fmt.Errorf("cordon-oci broker: the init's seccomp descriptor: %w", err)
	}
	if err := runtimePeer(c); err != nil {
		c.Close()
		return fmt.Errorf("cordon-oci broker: %w", err)
	}
	st, fd, err := recvSeccompFD(c)
	c.Close()
	if err != nil {
		return fmt.Errorf("cordon-oci broker: %w", err)
	}
	defer unix.Close(fd)
	pid := st.State.Pid
	pidfd, refuse := unix.PidfdOpen(pid, 0)
	if refuse == nil {
		defer unix.Close(pidfd)
	} else {
		refuse = fmt.Errorf("watch the init %d: %w", pid, refuse)
	}
	var dev *netguard.Device
	if refuse == nil && len(g.cfg.Allow) > 0 {
		if dev, refuse = g.tunOf(pid); dev != nil {
			defer dev.Close()
		}
	}
	if err := passInitFIFO(fd, pid, refuse); err != nil {
		return fmt.Errorf("cordon-oci broker: %w", err)
	}
	lf, err := g.l.File()
	if err != nil {
		return fmt.Errorf("cordon-oci broker: the listener: %w", err)
	}
	defer lf.Close()
	return g.send(handoff{Pid: pid, Broker: true}, []int{pidfd, int(lf.Fd()), fd}, dev)
}

// send hands the supervisor h with fds, then dev's (nil: none).
func (g *gate) send(h handoff, fds []int, dev *netguard.Device) error {
	if dev != nil {
		h.Tun, h.DNS, h.Forward = true, len(dev.DNS), len(dev.Forward)
		fds = append(fds, int(dev.Tun.Fd()))
		for _, f := range append(dev.DNS, dev.Forward...) {
			fds = append(fds, int(f.Fd()))
		}
	}
	msg, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("cordon-oci broker: the handoff: %w", err)
	}
	if err := unix.Sendmsg(int(g.hand.Fd()), msg, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("cordon-oci broker: hand the container to its supervisor: %w", err)
	}
	return nil
}

// tunFor makes the guard's device in the network namespace of the
// container's init (pid), which has not started the command yet. A locked
// thread joins the namespace and ends there: the runtime's user may own
// the container's namespace (rootless podman) but not the one it would go
// back to.
func tunFor(pid int, allow []string) (*netguard.Device, error) {
	rules, err := netguard.ParseRules(allow)
	if err != nil {
		return nil, fmt.Errorf("network allow list: %w", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("network allow list: the container's network namespace: %w", err)
	}
	defer ns.Close()
	if same, err := sameFile(ns, "/proc/self/ns/net"); err != nil || same {
		return nil, fmt.Errorf("network allow list: the container has no network namespace of its own (%v)", err)
	}
	type result struct {
		dev *netguard.Device
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("join the container's network namespace: %w", err)}
			return
		}
		dev, err := netguard.MakeTun(netguard.LoopbackResolvers("/etc/resolv.conf"), netguard.LoopbackForwards(rules))
		ch <- result{dev, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("network allow list: %w", r.err)
	}
	r.dev.EndsWithNamespace = true
	return r.dev, nil
}

// errNoHandoff is a handoff socket closed with nothing sent: create failed
// before the container's init came, and there is nothing to serve.
var errNoHandoff = errors.New("create ended before it handed the container over")

// recvHandoff reads create's message from the handoff socket.
func recvHandoff(sock *os.File) (handed, error) {
	out := handed{seccompFD: -1, pidfd: -1}
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4*(4+64)))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return out, fmt.Errorf("the handoff: %w", err)
	}
	if n == 0 && oobn == 0 {
		return out, errNoHandoff
	}
	var fds []int
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	closeAll := func(fds []int) {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	var h handoff
	jerr := json.Unmarshal(buf[:n], &h)
	want := 1
	if h.Broker {
		want += 2
	}
	if h.Tun {
		want += 1 + h.DNS + h.Forward
	}
	if perr != nil || jerr != nil || len(fds) != want || (!h.Broker && !h.Tun) {
		closeAll(fds)
		return out, fmt.Errorf("the handoff: malformed (%d descriptors, %v %v)", len(fds), perr, jerr)
	}
	out.pidfd, fds = fds[0], fds[1:]
	if h.Broker {
		l, err := net.FileListener(os.NewFile(uintptr(fds[0]), "broker-listener"))
		unix.Close(fds[0])
		if err != nil {
			unix.Close(out.pidfd)
			closeAll(fds[1:])
			return handed{seccompFD: -1, pidfd: -1}, fmt.Errorf("the handoff's listener: %w", err)
		}
		out.l, out.seccompFD, fds = l.(*net.UnixListener), fds[1], fds[2:]
	}
	if h.Tun {
		d := &netguard.Device{Tun: os.NewFile(uintptr(fds[0]), "/dev/net/tun"), EndsWithNamespace: true}
		for i, fd := range fds[1:] {
			if i < h.DNS {
				d.DNS = append(d.DNS, os.NewFile(uintptr(fd), "dns"))
			} else {
				d.Forward = append(d.Forward, os.NewFile(uintptr(fd), "forward"))
			}
		}
		out.dev = d
	}
	return out, nil
}

package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// MTU of the tun device and of the stack's NIC: large, as the loopback
// device's, so one stream is not limited by per-packet work.
const MTU = 65520

const nicID = 1

// tcpBuffer is each TCP endpoint's send and receive buffer. Measured with
// one 1 GiB stream through `cordon run` here: 1 MiB gave 4 Gbit/s with a
// supervisor of 24 MB RSS; 8 MiB gave no more throughput and 33 MB.
const tcpBuffer = 1 << 20

// Guard is a running userspace stack over one sandbox's tun device.
type Guard struct {
	*policy
	tun *os.File
	// leaveTun: Close leaves the device to its namespace's end (see
	// Device.EndsWithNamespace).
	leaveTun bool
	stack    *stack.Stack
	link     stack.LinkEndpoint
	filter   *icmpFilter

	closeOnce sync.Once
	conns     sync.WaitGroup
	// ctx ends with Close: dials in flight give up.
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	// open are the upstream connections, closed by Close.
	open map[net.Conn]struct{}
	// closers are the loopback DNS sockets.
	closers []io.Closer
	// active counts the connections and DNS queries being served;
	// udpSockets the sandbox's DNS sockets served until idle.
	active     atomic.Int32
	udpSockets atomic.Int32
}

// maxUDPSockets bounds the sandbox's DNS client sockets the guard serves
// at once (each a few KB, held udpIdle after its last query).
const maxUDPSockets = 2048

// maxActive bounds the TCP connections and DNS queries a guard serves at
// once. Each connection holds buffers in cordon's own
// process (about 0.7 MB when the client writes faster than the server
// reads), which is outside the sandbox's memory limit: without a bound a
// command opening thousands of connections grew it by gigabytes.
const maxActive = 256

// acquire takes one of the maxActive slots; release gives it back.
func (g *Guard) acquire() bool {
	if g.active.Add(1) > maxActive {
		g.active.Add(-1)
		return false
	}
	return true
}

func (g *Guard) release() { g.active.Add(-1) }

// spawn runs fn on a goroutine of its own within a slot, or returns false
// when every slot is taken.
func (g *Guard) spawn(fn func()) bool {
	if !g.acquire() {
		return false
	}
	g.conns.Add(1)
	go func() {
		defer g.conns.Done()
		defer g.release()
		fn()
	}()
	return true
}

// tooMany records a connection or query refused because maxActive are
// being served.
func (g *Guard) tooMany(proto string, dst netip.Addr, port uint16) {
	g.record(Event{Proto: proto, Addr: dst.String(), Port: port, Decision: Deny, Reason: ReasonTooMany,
		Detail: fmt.Sprintf("%s: refused, %d connections and DNS queries are open already (the most one sandbox may have at once)", hostPort(dst.String(), port), maxActive)})
}

// Start runs the guard over dev, a sandbox's tun device (IFF_TUN,
// IFF_NO_PI) and loopback DNS sockets: New, then Attach. The guard owns
// dev from then on, and closes it in Close.
func Start(dev *Device, cfg Config) (*Guard, error) {
	g, err := New(cfg)
	if err != nil {
		dev.Close()
		return nil, err
	}
	if err := g.Attach(dev); err != nil {
		return nil, err
	}
	return g, nil
}

// New makes a guard's policy and its stack, which has no device yet and
// so sees no packet until Attach. It is the part of Start that needs no
// sandbox: a caller may make it while the sandbox is being made. A guard
// that is never attached needs no Close.
func New(cfg Config) (*Guard, error) {
	p, err := newPolicy(cfg)
	if err != nil {
		return nil, err
	}
	g := &Guard{policy: p, open: map[net.Conn]struct{}{}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.build()
	return g, nil
}

// Attach gives the guard its device and serves it: from then on every
// packet of the tun device reaches the stack, and every DNS socket and
// loopback listener is answered. The guard owns dev, and closes it in
// Close (also when Attach fails, which closes the guard).
func (g *Guard) Attach(dev *Device) error {
	if g.tun != nil {
		dev.Close()
		return errors.New("netguard: the guard has a device already")
	}
	g.tun, g.leaveTun = dev.Tun, dev.EndsWithNamespace
	link, err := fdbased.New(&fdbased.Options{
		FDs: []int{int(g.tun.Fd())},
		MTU: MTU,
		// The kernel checks what it sends; the stack need not again.
		RXChecksumOffload:  true,
		PacketDispatchMode: fdbased.Readv,
	})
	if err != nil {
		dev.Close()
		g.tun = nil
		g.Close()
		return fmt.Errorf("netguard: tun endpoint: %w", err)
	}
	filter := &icmpFilter{p: g.policy}
	filter.Init(link, filter)
	g.filter, g.link = filter, link
	s := g.stack
	if terr := s.CreateNICWithOptions(nicID, filter, stack.NICOptions{}); terr != nil {
		dev.closeSockets()
		g.Close()
		return fmt.Errorf("netguard: NIC: %s", terr)
	}
	// Every destination is "local" to the stack, so that it terminates
	// every connection and the guard decides each one.
	for _, f := range []func(tcpip.NICID, bool) tcpip.Error{s.SetPromiscuousMode, s.SetSpoofing} {
		if terr := f(nicID, true); terr != nil {
			dev.closeSockets()
			g.Close()
			return fmt.Errorf("netguard: NIC mode: %s", terr)
		}
	}
	if err := g.serveDNSFiles(dev.DNS); err != nil {
		for _, f := range dev.Forward {
			f.Close()
		}
		g.Close()
		return err
	}
	if err := g.serveForwards(dev.Forward); err != nil {
		g.Close()
		return err
	}
	return nil
}

// build makes the stack: its protocols, options, routes and handlers; the
// NIC is Attach's.
func (g *Guard) build() {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
		HandleLocal:        false,
	})
	g.stack = s
	s.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: nicID},
		{Destination: header.IPv6EmptySubnet, NIC: nicID},
	})
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	// Buffers large enough for one stream over a 64 KiB MTU (see
	// tcpBuffer), and receive-buffer auto-tuning, as tun2socks sets them.
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &moderate)
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: tcpBuffer, Max: tcpBuffer}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: tcp.MinBufferSize, Default: tcpBuffer, Max: tcpBuffer}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd)
	fwd := tcp.NewForwarder(s, 0, 1024, g.handleTCP)
	s.SetTransportProtocolHandler(tcp.ProtocolNumber, fwd.HandlePacket)
	ufwd := udp.NewForwarder(s, g.handleUDP)
	s.SetTransportProtocolHandler(udp.ProtocolNumber, func(id stack.TransportEndpointID, pkt *stack.PacketBuffer) bool {
		if id.LocalPort == 53 {
			return ufwd.HandlePacket(id, pkt)
		}
		g.record(Event{Proto: "udp", Addr: addrOf(id.LocalAddress).String(), Port: id.LocalPort, Decision: Deny, Reason: ReasonUDP,
			Detail: fmt.Sprintf("UDP to %s blocked (QUIC?); only TCP and DNS are forwarded", hostPort(addrOf(id.LocalAddress).String(), id.LocalPort))})
		// Not handled: the stack answers ICMP port unreachable at once.
		return false
	})
}

// Close stops the stack, cuts the connections in flight, waits until each
// has recorded its event, and closes the tun device (see
// Device.EndsWithNamespace).
func (g *Guard) Close() error {
	g.closeOnce.Do(func() {
		// First no packet reaches the stack: no new connection, query
		// or decision starts (and none adds to conns while it is
		// waited for).
		if g.filter != nil {
			g.filter.stop()
		}
		g.cancel()
		g.stack.Close()
		g.mu.Lock()
		for c := range g.open {
			c.Close()
		}
		g.open = nil
		g.mu.Unlock()
		for _, c := range g.closers {
			c.Close()
		}
		g.conns.Wait()
		g.stack.Wait()
		g.Flush()
		if g.tun == nil {
			return
		}
		// Closing the last descriptor of a tun device unregisters it,
		// which waits for RCU grace periods (about 10 ms), and so does
		// the exit of a process that holds it. A device whose namespace
		// ends with the sandbox is made persistent first: closing it
		// then only detaches it, and the kernel deletes it with the
		// namespace, in the background. Elsewhere the stack is done
		// with it, so the caller need not wait.
		if g.leaveTun {
			if err := unix.IoctlSetInt(int(g.tun.Fd()), unix.TUNSETPERSIST, 1); err == nil {
				g.tun.Close()
				return
			}
		}
		go g.tun.Close()
	})
	return nil
}

// track registers an upstream connection for Close to cut; it returns
// false (and closes c) when the guard is closed already.
func (g *Guard) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		c.Close()
		return false
	}
	g.open[c] = struct{}{}
	return true
}

func (g *Guard) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.open, c)
	g.mu.Unlock()
	c.Close()
}

// addrOf converts a stack address.
func addrOf(a tcpip.Address) netip.Addr {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return ip.Unmap()
}

// icmpFilter lets only TCP and UDP reach the stack (which would
// otherwise answer pings to every address itself), and records ICMP echo
// requests as denials. IPv6 packets with extension headers are dropped
// too: nothing the sandbox needs sends them, and they could hide what
// follows.
type icmpFilter struct {
	nested.Endpoint
	p *policy
	// mu is held (shared) while a packet is delivered; stop takes it to
	// set stopped, after which nothing reaches the stack.
	mu      sync.RWMutex
	stopped bool
}

// stop delivers nothing more, once the packets being delivered are.
func (f *icmpFilter) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

// DeliverNetworkPacket implements stack.NetworkDispatcher.
func (f *icmpFilter) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.stopped {
		return
	}
	v := pkt.ToView()
	next, dst, payload, ok := transportOf(proto, v.AsSlice())
	echo := len(payload) > 0 && (next == header.ICMPv4ProtocolNumber && header.ICMPv4Type(payload[0]) == header.ICMPv4Echo ||
		next == header.ICMPv6ProtocolNumber && header.ICMPv6Type(payload[0]) == header.ICMPv6EchoRequest)
	v.Release()
	switch {
	case ok && (next == header.TCPProtocolNumber || next == header.UDPProtocolNumber):
		f.Endpoint.DeliverNetworkPacket(proto, pkt)
	case echo:
		// Other ICMP (router solicitations, errors) is dropped unrecorded.
		f.p.record(Event{Proto: "icmp", Addr: dst.String(), Decision: Deny, Reason: ReasonICMP,
			Detail: fmt.Sprintf("ICMP to %s blocked; only TCP and DNS are forwarded", dst)})
	}
}

// transportOf reads the transport protocol and the destination of an IP
// packet and its payload, without looking past an IPv6 header's first next-header field.
func transportOf(proto tcpip.NetworkProtocolNumber, b []byte) (tcpip.TransportProtocolNumber, netip.Addr, []byte, bool) {
	switch proto {
	case header.IPv4ProtocolNumber:
		h := header.IPv4(b)
		if !h.IsValid(len(b)) {
			return 0, netip.Addr{}, nil, false
		}
		return h.TransportProtocol(), addrOf(h.DestinationAddress()), h.Payload(), true
	case header.IPv6ProtocolNumber:
		h := header.IPv6(b)
		if !h.IsValid(len(b)) {
			return 0, netip.Addr{}, nil, false
		}
		return tcpip.TransportProtocolNumber(h.NextHeader()), addrOf(h.DestinationAddress()), h.Payload(), true
	}
	return 0, netip.Addr{}, nil, false
}

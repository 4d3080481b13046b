package netguard

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// dnsIdle bounds how long a DNS-over-TCP connection may sit idle.
const dnsIdle = 10 * time.Second

// udpIdle is how long a DNS client's UDP socket is served after its last
// query.
const udpIdle = 5 * time.Second

// handleUDP answers one DNS datagram (the stack hands only port 53 here).
func (g *Guard) handleUDP(r *udp.ForwarderRequest) bool {
	// A resolver opens a socket per lookup (glibc does), which the guard
	// serves until udpIdle: these are counted apart from connections, or
	// a program resolving a few dozen names a second would run out.
	if g.udpSockets.Add(1) > maxUDPSockets {
		g.udpSockets.Add(-1)
		id := r.ID()
		g.tooMany("dns", addrOf(id.LocalAddress), id.LocalPort)
		return true
	}
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		g.udpSockets.Add(-1)
		return true
	}
	conn := gonet.NewUDPConn(&wq, ep)
	g.conns.Add(1)
	go func() {
		defer g.conns.Done()
		defer g.udpSockets.Add(-1)
		defer conn.Close()
		// Resolvers send several queries from one socket (A and AAAA at
		// once): they all reach this endpoint, so it answers until idle.
		buf := make([]byte, 4096)
		for {
			_ = conn.SetReadDeadline(time.Now().Add(udpIdle))
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			q := append([]byte(nil), buf[:n]...)
			// A query over the bound is dropped (and recorded): the
			// client asks again.
			ok := g.spawn(func() {
				if resp := g.answer(q); resp != nil {
					if len(resp) > 512 {
						resp = truncated(q)
					}
					_, _ = conn.Write(resp)
				}
			})
			if !ok {
				g.tooMany("dns", addrOf(r.ID().LocalAddress), 53)
			}
		}
	}()
	return true
}

// serveDNSTCP answers DNS over TCP on one connection.
func (g *Guard) serveDNSTCP(r *tcp.ForwarderRequest) {
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		r.Complete(true)
		return
	}
	r.Complete(false)
	g.serveDNSConn(gonet.NewTCPConn(&wq, ep))
}

// serveDNSConn answers DNS over one TCP connection until it is idle.
func (g *Guard) serveDNSConn(conn net.Conn) {
	defer conn.Close()
	var l [2]byte
	for {
		_ = conn.SetReadDeadline(time.Now().Add(dnsIdle))
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(conn, msg); err != nil {
			return
		}
		resp := g.answer(msg)
		if resp == nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := conn.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// serveDNSFiles answers DNS on the Device's loopback sockets, in the
// sandbox's namespace; Close closes them.
func (g *Guard) serveDNSFiles(files []*os.File) error {
	for i, f := range files {
		typ, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil {
			for _, rest := range files[i:] {
				rest.Close()
			}
			return fmt.Errorf("netguard: DNS socket: %w", err)
		}
		if typ == unix.SOCK_DGRAM {
			pc, err := net.FilePacketConn(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("netguard: DNS socket: %w", err)
			}
			g.closers = append(g.closers, pc)
			g.conns.Add(1)
			go g.serveDNSPackets(pc)
			continue
		}
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("netguard: DNS socket: %w", err)
		}
		g.closers = append(g.closers, l)
		g.conns.Add(1)
		go func() {
			defer g.conns.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if !g.spawn(func() { g.serveDNSConn(c) }) {
					c.Close()
				}
			}
		}()
	}
	return nil
}

func (g *Guard) serveDNSPackets(pc net.PacketConn) {
	defer g.conns.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := append([]byte(nil), buf[:n]...)
		// A query over the bound is dropped (and recorded): the client
		// asks again.
		ok := g.spawn(func() {
			if resp := g.answer(q); resp != nil {
				if len(resp) > 512 {
					resp = truncated(q)
				}
				_, _ = pc.WriteTo(resp, from)
			}
		})
		if !ok {
			if a, err := netip.ParseAddrPort(pc.LocalAddr().String()); err == nil {
				g.tooMany("dns", a.Addr(), 53)
			}
		}
	}
}

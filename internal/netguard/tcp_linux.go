package netguard

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// handleTCP decides one SYN. The destination must be an address a pinned,
// allowed name resolved to for this port, or an allowed address; then the
// guard dials that same address (never a name: nothing is re-resolved) and
// only then completes the handshake, so a refused or unreachable
// destination looks to the client as it would on a real network.
func (g *Guard) handleTCP(r *tcp.ForwarderRequest) {
	id := r.ID()
	dst, port := addrOf(id.LocalAddress), id.LocalPort
	if port == 53 {
		if !g.spawn(func() { g.serveDNSTCP(r) }) {
			g.tooMany("tcp", dst, port)
			r.Complete(true)
		}
		return
	}
	c := &tcpConn{p: g.policy, dst: dst, port: port}
	if !c.admit() {
		if port == 22 {
			// ssh (git over ssh) prints a refusal it can read.
			if !g.spawn(func() { refuseSSH(r, c.ev.Detail) }) {
				r.Complete(true)
			}
			return
		}
		r.Complete(true)
		return
	}
	if !g.spawn(func() { g.runConn(c, r) }) {
		g.tooMany("tcp", dst, port)
		r.Complete(true)
	}
}

// runConn dials an admitted connection's destination and relays it.
func (g *Guard) runConn(c *tcpConn, r *tcp.ForwarderRequest) {
	p := g.policy
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	up, err := p.dial(ctx, "tcp", net.JoinHostPort(c.dst.String(), strconv.Itoa(int(c.port))))
	cancel()
	if err != nil {
		r.Complete(true)
		c.ev.Decision, c.ev.Reason, c.ev.Detail = Deny, ReasonUpstream, fmt.Sprintf("%s: %v", hostPort(c.dst.String(), c.port), err)
		p.record(c.ev)
		return
	}
	if !g.track(up) {
		r.Complete(true)
		return
	}
	defer g.untrack(up)
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		r.Complete(true)
		return
	}
	r.Complete(false)
	ep.SocketOptions().SetKeepAlive(true)
	down := gonet.NewTCPConn(&wq, ep)
	defer down.Close()
	c.relay(down, up)
}

// refuseSSH accepts a refused connection to port 22 and answers in SSH's
// own protocol: a version line, then a disconnect message (allowed before
// key exchange) whose text OpenSSH prints, as srt does.
func refuseSSH(r *tcp.ForwarderRequest, detail string) {
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		r.Complete(true)
		return
	}
	r.Complete(false)
	conn := gonet.NewTCPConn(&wq, ep)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "SSH-2.0-cordon_policy_refusal\r\n"); err != nil {
		return
	}
	// The client's version line, then the disconnect.
	_, _ = bufio.NewReader(conn).ReadString('\n')
	_, _ = conn.Write(sshDisconnect("cordon: network_denied: " + detail))
	conn.CloseWrite()
	_, _ = io.Copy(io.Discard, conn)
}

// sshDisconnect is an unencrypted SSH_MSG_DISCONNECT packet (RFC 4253
// 6, 11.1) with reason 1, host not allowed to connect.
func sshDisconnect(text string) []byte {
	var payload []byte
	payload = append(payload, 1) // SSH_MSG_DISCONNECT
	payload = binary.BigEndian.AppendUint32(payload, 1)
	payload = binary.BigEndian.AppendUint32(payload, uint32(len(text)))
	payload = append(payload, text...)
	payload = binary.BigEndian.AppendUint32(payload, 0) // language tag
	pad := 8 - (4+1+len(payload))%8
	if pad < 4 {
		pad += 8
	}
	pkt := binary.BigEndian.AppendUint32(nil, uint32(1+len(payload)+pad))
	pkt = append(pkt, byte(pad))
	pkt = append(pkt, payload...)
	return append(pkt, make([]byte, pad)...)
}

// admit decides the destination alone, before any byte is read.
func (c *tcpConn) admit() bool {
	p := c.p
	c.ev = Event{Time: time.Now().UTC(), Proto: "tcp", Addr: c.dst.String(), Port: c.port, HostFrom: FromAddr}
	if r, ok := addrRule(p.rules, c.dst, c.port); ok {
		c.addrRule = r
		c.ev.Rule = r.Text
		return true
	}
	names, any := p.pinned(c.dst, c.port)
	if len(names) > 0 {
		c.names = names
		c.ev.Host, c.ev.HostFrom = names[0], FromDNS
		return true
	}
	c.ev.Decision = Deny
	if any {
		pn, _ := p.pinnedAny(c.dst)
		_, why := nameDecision(p.rules, pn, c.port)
		c.ev.Host, c.ev.HostFrom, c.ev.Reason, c.ev.Detail = pn, FromDNS, ReasonPort, why
	} else {
		c.ev.Reason = ReasonAddress
		c.ev.Detail = fmt.Sprintf("%s is not in the allow list %s: it is an address no allowed host resolved to; connect by name",
			hostPort(c.dst.String(), c.port), list(p.rules))
	}
	p.record(c.ev)
	return false
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

// pinnedAny returns one name pinned to a, on any port.
func (p *policy) pinnedAny(a netip.Addr) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pn := p.pins[a.Unmap()]; pn != nil {
		for n := range pn.names {
			return n, true
		}
	}
	return "", false
}

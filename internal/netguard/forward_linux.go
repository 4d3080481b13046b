package netguard

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// serveForwards forwards the connections to the Device's loopback
// listeners (in the sandbox's namespace) to the same address and port of
// the host, as the allow list says; Close closes them. Each connection
// is one event.
func (g *Guard) serveForwards(files []*os.File) error {
	for i, f := range files {
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, rest := range files[i+1:] {
				rest.Close()
			}
			return fmt.Errorf("netguard: loopback listener: %w", err)
		}
		ap, err := netip.ParseAddrPort(l.Addr().String())
		if err != nil {
			l.Close()
			return fmt.Errorf("netguard: loopback listener %s: %w", l.Addr(), err)
		}
		rule := g.loopbackRule(ap)
		g.closers = append(g.closers, l)
		g.conns.Add(1)
		go func() {
			defer g.conns.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				g.conns.Add(1)
				go func() {
					defer g.conns.Done()
					g.forward(c, ap, rule)
				}()
			}
		}()
	}
	return nil
}

// loopbackRule is the rule that made the guard listen on ap.
func (g *Guard) loopbackRule(ap netip.AddrPort) string {
	if r, ok := addrRule(g.rules, ap.Addr(), ap.Port()); ok {
		return r.Text
	}
	r, _ := nameDecision(g.rules, "localhost", ap.Port())
	return r.Text
}

func (g *Guard) forward(down net.Conn, ap netip.AddrPort, rule string) {
	defer down.Close()
	ev := Event{Time: time.Now().UTC(), Proto: "tcp", Host: ap.Addr().String(), HostFrom: FromAddr, Addr: ap.Addr().String(), Port: ap.Port(), Rule: rule}
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	up, err := g.dial(ctx, "tcp", net.JoinHostPort(ap.Addr().String(), strconv.Itoa(int(ap.Port()))))
	cancel()
	if err != nil {
		ev.Decision, ev.Reason, ev.Detail = Deny, ReasonUpstream, fmt.Sprintf("%s on the host: %v", ap, err)
		g.record(ev)
		return
	}
	if !g.track(up) {
		return
	}
	defer g.untrack(up)
	var in, out atomic.Int64
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(down, up)
		in.Add(n)
		closeWrite(down)
		close(done)
	}()
	n, _ := io.Copy(up, down)
	out.Add(n)
	closeWrite(up)
	<-done
	ev.Decision, ev.BytesIn, ev.BytesOut = Allow, in.Load(), out.Load()
	g.record(ev)
}

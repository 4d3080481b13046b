package netguard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// TestGuardBoundsFloodedDecisions: a command that floods refused
// datagrams gets each one refused, but cordon lists at most maxEvents
// decisions one by one and counts the rest by kind, so its memory, the
// report and the audit log stay bounded; the denials it keeps for the
// failure's detail are bounded too, and their count is exact.
func TestGuardBoundsFloodedDecisions(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	s := newSandboxNS(t, h, "allowed.test:80")
	// The tun's queue drops what the guard has not read yet, so a loaded
	// machine decides fewer datagrams than were sent: send many more than
	// maxEvents, and pause now and then so the guard keeps up.
	const sent = 8 * maxEvents
	out, err := s.run("python3", "-c", fmt.Sprintf(`import socket, time
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
n=0
for i in range(%d):
    try:
        s.sendto(b"x",("%s",1000+i%%30000)); n+=1
    except OSError: pass
    if i %% 256 == 255: time.sleep(0.002)
print(n)`, sent, h.Addr))
	if err != nil {
		t.Fatalf("flood: %v: %s", err, out)
	}
	s.g.Close()
	evs := s.events()
	listed, counted, denied := 0, int64(0), int64(0)
	for _, e := range evs {
		if e.Decision == Deny && e.Reason != ReasonUpstream {
			// Every denial, the flood's and any other the namespace made.
			denied += max(1, e.Count)
		}
		if e.Proto != "udp" {
			continue
		}
		if e.Decision != Deny || e.Reason != ReasonUDP {
			t.Fatalf("udp event %+v", e)
		}
		if e.Count > 0 {
			counted += e.Count
		} else {
			listed++
		}
	}
	if len(evs) > maxEvents+4 {
		t.Fatalf("%d events listed; want at most %d and the counts", len(evs), maxEvents)
	}
	total := int64(listed) + counted
	if counted == 0 || total <= maxEvents {
		t.Fatalf("%d listed and %d counted udp denials of %d sent; want more than %d in all", listed, counted, sent, maxEvents)
	}
	if d := s.g.Denials(); len(d) != maxDenials {
		t.Fatalf("%d denials kept; want %d", len(d), maxDenials)
	}
	if n := s.g.DenialCount(); int64(n) != denied {
		t.Fatalf("DenialCount %d; want %d", n, denied)
	}
	t.Logf("%d listed, %d counted of %d datagrams sent", listed, counted, sent)
}

// TestGuardBoundsConnections: a command that opens more connections than
// the guard serves at once gets the ones over maxActive refused, typed and
// recorded, and nothing of them dialled; once it closes some, new ones
// are served again.
func TestGuardBoundsConnections(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	addr := fmt.Sprintf("%s:%d", h.Addr, h.EchoPort)
	s := newSandboxNS(t, h, addr)
	out, err := s.run("python3", "-c", fmt.Sprintf(`import socket
cs=[]; refused=0
for i in range(%d):
    try: cs.append(socket.create_connection(("%s",%d),timeout=20))
    except ConnectionRefusedError: refused+=1
for c in cs: c.close()
import time
for i in range(100):
    try:
        c=socket.create_connection(("%s",%d),timeout=20); c.sendall(b"again"); c.shutdown(socket.SHUT_WR)
        print(len(cs), refused, c.recv(10).decode()); break
    except ConnectionRefusedError: time.sleep(0.1)
`, maxActive+20, h.Addr, h.EchoPort, h.Addr, h.EchoPort))
	if err != nil || strings.TrimSpace(out) != fmt.Sprintf("%d 20 again", maxActive) {
		t.Fatalf("connections served, refused, echo after: %q, %v; want %d 20 again", out, err, maxActive)
	}
	s.g.Close()
	refused, dialled := 0, 0
	for _, e := range s.events() {
		switch {
		case e.Reason == ReasonTooMany:
			refused++
		case e.Proto == "tcp" && e.Decision == Allow:
			dialled++
		}
	}
	// The last connection may be refused a few times while the closed
	// ones end.
	if refused < 20 || dialled != maxActive+1 {
		t.Fatalf("%d refused, %d served; want at least 20 and %d", refused, dialled, maxActive+1)
	}
	if d := s.denial(t, ReasonTooMany); !strings.Contains(d.Detail, "open already") {
		t.Fatalf("denial %+v", d)
	}
}

// TestGuardServesManyLookups: a program that resolves names one after
// the other, each lookup from a socket of its own (as glibc does), is not
// held to the bound on connections: the guard serves each socket for a
// while after its last query, and more lookups than maxActive in that
// while all get their answer.
func TestGuardServesManyLookups(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	s := newSandboxNS(t, h, "allowed.test:80")
	out, err := s.run("python3", "-c", fmt.Sprintf(`import socket
for i in range(%d):
    socket.getaddrinfo("allowed.test", 80, socket.AF_INET, socket.SOCK_STREAM)
print("ok")`, 3*maxActive))
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("lookups: %q, %v", out, err)
	}
	s.g.Close()
	answered := 0
	for _, e := range s.events() {
		if e.Decision != Allow {
			t.Fatalf("event %+v", e)
		}
		if e.Proto == "dns" && e.Addr != "" {
			answered++
		}
	}
	// Every lookup was answered the first time it asked.
	if answered != 3*maxActive {
		t.Fatalf("%d A answers for %d lookups", answered, 3*maxActive)
	}
}

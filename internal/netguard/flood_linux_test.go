package netguard

import (
	"fmt"
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
	const sent = 3 * maxEvents
	out, err := s.run("python3", "-c", fmt.Sprintf(`import socket
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
n=0
for i in range(%d):
    try:
        s.sendto(b"x",("%s",1000+i)); n+=1
    except OSError: pass
print(n)`, sent, h.Addr))
	if err != nil {
		t.Fatalf("flood: %v: %s", err, out)
	}
	s.g.Close()
	evs := s.events()
	listed, counted := 0, int64(0)
	for _, e := range evs {
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
	if n := s.g.DenialCount(); int64(n) != total {
		t.Fatalf("DenialCount %d; want %d", n, total)
	}
	t.Logf("%d listed, %d counted of %d datagrams sent", listed, counted, sent)
}

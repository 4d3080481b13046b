package netguard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// TestGuardWildcardNeverYieldsThisMachine: cordon dials from the host, so
// an address of one of the host's own interfaces reaches every service
// listening on all addresses, as loopback would. A wildcard rule never
// yields one (in DNS answers or from the hosts file), and nothing is
// dialled there; another machine's address on the same link is yielded.
func TestGuardWildcardNeverYieldsThisMachine(t *testing.T) {
	h := nettest.NewHost(t, "allowed.test")
	self := h.Addr.Prev() // the host's end of the test host's link
	if h.NS == "" {
		t.Skip("the test host is this machine")
	}
	h.Extra["self.wild.test"] = self
	h.Extra["peer.wild.test"] = h.Addr
	hosts := fmt.Sprintf("%s selfhosts.wild.test\n", self)
	s := newSandboxNSWith(t, h, sandboxOpts{hosts: hosts}, "*.wild.test:80")
	if !s.g.local[self] {
		t.Fatalf("%s is not among this machine's addresses %v", self, s.g.local)
	}
	if out, err := s.run("getent", "ahostsv4", "self.wild.test"); err == nil {
		t.Fatalf("self.wild.test resolved: %s", out)
	}
	d := s.denial(t, ReasonPrivate)
	if !strings.Contains(d.Detail, "this machine's own addresses") {
		t.Fatalf("denial %+v", d)
	}
	// The address is not pinned from the hosts file either: a connection
	// to it is refused before anything is dialled.
	if out, err := s.run(curl("-f", "http://selfhosts.wild.test/")...); err == nil {
		t.Fatalf("selfhosts.wild.test: %q", out)
	}
	s.denial(t, ReasonAddress)
	out, err := s.run(curl("http://peer.wild.test/")...)
	if err != nil || out != h.Body {
		t.Fatalf("peer.wild.test: %q, %v; want %q", out, err, h.Body)
	}
	s.g.Close()
	for _, e := range s.events() {
		if e.Proto == "tcp" && e.Addr == self.String() && e.Decision == Allow {
			t.Fatalf("dialled this machine: %+v", e)
		}
	}
}

package netguard

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// askedResolver answers every name with one documentation address and
// remembers each name it was asked, so the fuzz target can check that the
// guard never sends a name outside the allow list to the host's resolver.
type askedResolver struct {
	mu    sync.Mutex
	asked []string
}

func (r *askedResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	if network == "ip6" {
		return []netip.Addr{netip.MustParseAddr("2001:db8::1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
}

// dnsQuery packs a one-question query for the seeds.
func dnsQuery(t testing.TB, name string, typ dnsmessage.Type) []byte {
	b, err := (&dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 7, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}},
	}).Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDNSAnswer: whatever bytes arrive as a query, the guard's DNS reader
// answers with a message a DNS client parses (or with nothing), echoes the
// query's ID, asks the host's resolver only for a name the allow list
// allows, and puts an address in an answer only for such a name.
func FuzzDNSAnswer(f *testing.F) {
	for _, q := range []struct {
		name string
		typ  dnsmessage.Type
	}{
		{"allowed.test.", dnsmessage.TypeA}, {"allowed.test.", dnsmessage.TypeAAAA},
		{"x.wild.test.", dnsmessage.TypeA}, {"wild.test.", dnsmessage.TypeA},
		{"other.test.", dnsmessage.TypeA}, {"allowed.test.", dnsmessage.TypeHTTPS},
		{"ALLOWED.test.", dnsmessage.TypeA}, {"allowed\\.test.", dnsmessage.TypeA},
	} {
		f.Add(dnsQuery(f, q.name, q.typ))
	}
	f.Add([]byte{0, 7, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, query []byte) {
		res := &askedResolver{}
		p, err := newPolicy(Config{Allow: []string{"allowed.test", "*.wild.test"}, Resolver: res})
		if err != nil {
			t.Fatal(err)
		}
		resp := p.answer(query)
		for _, name := range res.asked {
			if r, _ := nameDecision(p.rules, name, 0); r.Text == "" {
				t.Fatalf("%x: the host's resolver was asked for %q, which the allow list does not allow", query, name)
			}
		}
		if resp == nil {
			return
		}
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatalf("%x: the answer does not parse: %v", query, err)
		}
		if !m.Header.Response || len(query) < 2 || m.Header.ID != uint16(query[0])<<8|uint16(query[1]) {
			t.Fatalf("%x: answer header %+v", query, m.Header)
		}
		for _, a := range m.Answers {
			name := normalizeName(a.Header.Name.String())
			if r, _ := nameDecision(p.rules, name, 0); r.Text == "" {
				t.Fatalf("%x: answered %q, which the allow list does not allow", query, a.Header.Name)
			}
		}
	})
}

// clientHello is the first flight of a real TLS client for name.
func clientHello(name string) []byte {
	var out bytes.Buffer
	c, s := net.Pipe()
	go func() {
		_ = tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake() //nolint:gosec // only the ClientHello is read
	}()
	buf := make([]byte, 4096)
	n, _ := s.Read(buf)
	out.Write(buf[:n])
	_ = s.Close()
	_ = c.Close()
	return out.Bytes()
}

// TestServerNameSeeds: the seed ClientHellos of FuzzServerName are what
// Go's TLS client sends, and the SNI reader reads their names.
func TestServerNameSeeds(t *testing.T) {
	for _, name := range []string{"allowed.test", "other.test", "", "a.b.c.d.example"} {
		b := clientHello(name)
		if got, ok := serverName(bytes.NewReader(b)); !ok || got != name {
			t.Errorf("ClientHello for %q read as %q, %v", name, got, ok)
		}
		seed := filepath.Join("testdata", "fuzz", "FuzzServerName", "hello-"+strings.ReplaceAll(cmp.Or(name, "none"), ".", "-"))
		if os.Getenv("CORDON_WRITE_SEEDS") == "1" {
			if err := os.MkdirAll(filepath.Dir(seed), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seed, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(seed); err != nil {
			t.Errorf("seed corpus: %v (CORDON_WRITE_SEEDS=1 go test -run TestServerNameSeeds writes it)", err)
		}
	}
}

// FuzzServerName: the SNI reader never panics, and whatever name it reads
// from a ClientHello is the one Go's own TLS server reads from the same
// bytes (the guard uses crypto/tls to read it, so a second reader must not
// disagree on which site the connection is for).
func FuzzServerName(f *testing.F) {
	// Real ClientHellos (Go's client, with and without a server name) are
	// the seed corpus in testdata/fuzz/FuzzServerName, written by
	// TestServerNameSeeds: making them here would run a TLS client's key
	// generation in every fuzz worker.
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, ok := serverName(bytes.NewReader(b))
		again, ok2 := serverName(bytes.NewReader(b))
		if name != again || ok != ok2 {
			t.Fatalf("%x: read %q %v, then %q %v", b, name, ok, again, ok2)
		}
		if !ok && name != "" {
			t.Fatalf("%x: no ClientHello, yet the name %q", b, name)
		}
		if ok && strings.ContainsAny(name, "\x00/") && normalizeName(name) != "" {
			t.Fatalf("%x: server name %q normalizes to a host name", b, name)
		}
	})
}

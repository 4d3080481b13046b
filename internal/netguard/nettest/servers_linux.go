package nettest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vhostScript is Python's http.server with virtual hosts: it answers by
// the Host header alone, as a server in front of several sites does, even
// for an absolute-form target, and reads request lines as leniently as
// Python does (split on any whitespace). A GET's body is never read (the
// server reads what follows the head as the next request); a POST's is.
// It logs the Host of every request it serves. With argv[4] "1" it reads
// on after a request it could not parse, as some servers do, instead of
// closing the connection.
const vhostScript = `import sys, http.server, socketserver
log = sys.argv[3]
past_errors = sys.argv[4] == "1"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self, posted=""):
        host = self.headers.get("Host", "")
        with open(log, "a") as f:
            f.write(host + "\n")
        body = ("site %s: the content of %s%s\n" % (host, host, posted)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = len(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.do_GET(", %d bytes posted" % n)
    def send_error(self, *a, **k):
        super().send_error(*a, **k)
        if past_errors:
            self.close_connection = False
    def log_message(self, *a):
        pass
# (Not HTTPServer, whose bind asks reverse DNS for the address.)
s = socketserver.ThreadingTCPServer((sys.argv[1], int(sys.argv[2])), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`

// Vhosts is a lenient HTTP server with virtual hosts on the test host.
type Vhosts struct {
	// Port is its port on the host's address.
	Port int
	log  string
}

// ServeVhosts starts Python's http.server on the host's address, answering
// "site NAME: the content of NAME" for the Host NAME; the test's cleanup
// stops it.
func (h *Host) ServeVhosts(t testing.TB) *Vhosts {
	t.Helper()
	return h.serveVhosts(t, "0")
}

// ServeVhostsPastErrors starts a server as ServeVhosts does, which answers
// a request it cannot parse 400 and reads on, where Python's would close
// the connection.
func (h *Host) ServeVhostsPastErrors(t testing.TB) *Vhosts {
	t.Helper()
	return h.serveVhosts(t, "1")
}

func (h *Host) serveVhosts(t testing.TB, pastErrors string) *Vhosts {
	t.Helper()
	v := &Vhosts{log: filepath.Join(t.TempDir(), "served")}
	cmd := h.Command("python3", "-c", vhostScript, h.Addr.String(), "0", v.log, pastErrors)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// (Its stderr, where it prints the resets of refused connections, is
	// not shown.)
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3 http.server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if v.Port, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("python3 http.server did not say its port: %q, %v", line, err)
	}
	return v
}

// Served are the Host headers of the requests the server answered.
func (v *Vhosts) Served() []string {
	b, _ := os.ReadFile(v.log)
	return strings.Fields(string(b))
}

// Recorder is a TCP server on the test host that records what each
// connection sent it, and answers nothing.
type Recorder struct {
	// Port is its port on the host's address.
	Port int
	mu   sync.Mutex
	got  []byte
}

// ServeRecorder starts a Recorder.
func (h *Host) ServeRecorder(t testing.TB) *Recorder {
	t.Helper()
	l := h.Listen(t, 0)
	r := &Recorder{Port: port(l.Addr())}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					r.mu.Lock()
					r.got = append(r.got, buf[:n]...)
					r.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return r
}

// Got is every byte the Recorder's connections sent it so far.
func (r *Recorder) Got() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.got...)
}

// SSHServer answers an SSH client as far as the version exchange: it sends
// its identification line, reads the client's and the client's first
// binary packet (its KEXINIT), and then disconnects with Text, which
// OpenSSH's client prints.
type SSHServer struct {
	// Port is its port on the host's address.
	Port int
	// Text is the disconnect message it sends.
	Text string
	mu   sync.Mutex
	// ident and packet are what the last client sent.
	ident  string
	packet []byte
}

// ServeSSH starts an SSHServer on port (0: an ephemeral one).
func (h *Host) ServeSSH(t testing.TB, p int) *SSHServer {
	t.Helper()
	l := h.Listen(t, p)
	s := &SSHServer{Port: port(l.Addr()), Text: "the test host's ssh server says hello " + strings.TrimSpace(h.Body)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *SSHServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "SSH-2.0-cordon_test_server\r\n"); err != nil {
		return
	}
	br := bufio.NewReader(c)
	ident, err := br.ReadString('\n')
	if err != nil {
		return
	}
	var n uint32
	if binary.Read(br, binary.BigEndian, &n) != nil || n > 35000 {
		return
	}
	pkt := make([]byte, n)
	if _, err := io.ReadFull(br, pkt); err != nil {
		return
	}
	s.mu.Lock()
	s.ident, s.packet = ident, pkt
	s.mu.Unlock()
	_, _ = c.Write(SSHDisconnect(s.Text))
}

// Seen returns the identification line and the first packet's payload
// type (20 is KEXINIT) the last client sent; "" and 0 when none did.
func (s *SSHServer) Seen() (ident string, msgType byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.packet) < 2 {
		return s.ident, 0
	}
	return s.ident, s.packet[1]
}

// SSHDisconnect is an unencrypted SSH_MSG_DISCONNECT packet (RFC 4253
// 6, 11.1) with reason 11, by application.
func SSHDisconnect(text string) []byte {
	var payload []byte
	payload = append(payload, 1)
	payload = binary.BigEndian.AppendUint32(payload, 11)
	payload = binary.BigEndian.AppendUint32(payload, uint32(len(text)))
	payload = append(payload, text...)
	payload = binary.BigEndian.AppendUint32(payload, 0)
	pad := 8 - (4+1+len(payload))%8
	if pad < 4 {
		pad += 8
	}
	pkt := binary.BigEndian.AppendUint32(nil, uint32(1+len(payload)+pad))
	pkt = append(pkt, byte(pad))
	pkt = append(pkt, payload...)
	return append(pkt, make([]byte, pad)...)
}

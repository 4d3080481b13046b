package sessiond

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Dir.Stop sends its request only to the session's supervisor: a server
// at another pid than info.json records, or with no info.json, gets no
// byte and Stop fails with ErrNotSupervisor; the recorded one is asked.
func TestStopChecksTheServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   int // 0: no info.json
		want  error
		bytes bool
	}{
		{"its supervisor", os.Getpid(), nil, true},
		{"another pid", 1, ErrNotSupervisor, false},
		{"no info", 0, ErrNotSupervisor, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			name := "s1"
			if err := os.Mkdir(d.sessionDir(name), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.pid != 0 {
				if err := d.WriteInfo(Info{Name: name, PID: tc.pid}); err != nil {
					t.Fatal(err)
				}
			}
			l, err := d.Listen(name)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
				b := make([]byte, reqHeader)
				n, _ := io.ReadFull(c, b)
				got = n
				if n == reqHeader {
					_, _ = c.Write(encodeResponse(0, "", nil))
				}
			}()
			err = d.Stop(name)
			l.Close()
			wg.Wait()
			if !errors.Is(err, tc.want) || (got > 0) != tc.bytes {
				t.Fatalf("Stop: %v (want %v); the server got %d bytes", err, tc.want, got)
			}
			if tc.want != nil && !strings.Contains(err.Error(), name) {
				t.Fatalf("the error does not name the session: %v", err)
			}
		})
	}
}

// The supervisor serves no client outside its PID namespace: a process in
// a sandbox (here a new PID namespace, in a new user namespace that maps
// the caller's uid, so the uid check alone would pass it) is refused
// before its request is read, whether the caller is root or not. A client
// in the supervisor's namespace is served.
func TestCheckPeerRefusesAnotherPIDNamespace(t *testing.T) {
	for _, tool := range []string{"unshare", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	for _, tc := range []struct {
		name   string
		prefix []string
		refuse bool
	}{
		{"same namespace", nil, false},
		{"another PID namespace", []string{"unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "sock")
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			client := `import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"x")
time.sleep(5)
`
			args := append(append([]string{}, tc.prefix...), "python3", "-c", client, sock)
			cmd := exec.Command(args[0], args[1:]...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			_ = l.SetDeadline(time.Now().Add(20 * time.Second))
			c, err := l.AcceptUnix()
			if err != nil {
				t.Fatalf("accept: %v (client: %s)", err, stderr.String())
			}
			defer c.Close()
			err = checkPeer(c)
			if tc.refuse && (err == nil || !strings.Contains(err.Error(), "another PID namespace")) {
				t.Fatalf("checkPeer: %v; want a refusal of a client in another PID namespace", err)
			}
			if !tc.refuse && err != nil {
				t.Fatalf("checkPeer refused a client of its own namespace: %v", err)
			}
		})
	}
}

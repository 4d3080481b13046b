package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// unixServer is a small Python unix-socket echo server: it binds path,
// serves one client (itself, from a thread) and prints what came back and
// the socket's mode; it exits 1 when the bind is refused.
func unixServer(path string) []string {
	return []string{"python3", "-c", `import os, socket, sys, threading
p = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
try:
    s.bind(p)
except OSError as e:
    print("refused", e.errno); sys.exit(1)
s.listen(1)
def client():
    c = socket.socket(socket.AF_UNIX); c.connect(p); c.sendall(b"ping"); print(c.recv(4).decode())
t = threading.Thread(target=client); t.start()
a, _ = s.accept(); a.sendall(a.recv(4)); t.join()
print(oct(os.stat(p).st_mode))`, path}
}

// TestIntegrationBrokerBindUnixSocket is the security property "a unix
// socket file is never created under a protected or denied name": bind(2)
// to such a name (directly, through a symlinked directory, by absolute
// path, under a pattern's match) is refused with the path from the
// broker's record and nothing appears on the host; a real server binds and
// serves in an allowed directory (relative and absolute), and abstract and
// TCP binds still work.
func TestIntegrationBrokerBindUnixSocket(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
	sb.Deny = []string{ws + "/**/.env"}
	for _, d := range []string{".git/hooks", "sub/.git/hooks", "run"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".git/hooks", filepath.Join(ws, "h")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ bind, path string }{
		{".git/hooks/pre-commit", ws + "/.git/hooks/pre-commit"},
		{"h/post-checkout", ws + "/.git/hooks/post-checkout"},
		{ws + "/sub/.git/hooks/pre-push", ws + "/sub/.git/hooks/pre-push"},
		{"run/../.env", ws + "/.env"},
		{"sub/.env", ws + "/sub/.env"},
	} {
		out := run(t, sb, "", unixServer(tc.bind)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.path {
			t.Errorf("bind %s: want sandbox_denied on %s, got %+v %s", tc.bind, tc.path, out.res, out.stderr)
		}
		mustNotExist(t, tc.path)
	}
	for _, p := range []string{"run/a.sock", ws + "/run/b.sock"} {
		out := run(t, sb, "", unixServer(p)...)
		if out.res.ExitCode != 0 || !strings.HasPrefix(out.stdout, "ping\n0o140") {
			t.Fatalf("a unix server in an allowed directory: %+v %q %s", out.res, out.stdout, out.stderr)
		}
		if fi, err := os.Lstat(filepath.Join(ws, "run", filepath.Base(p))); err != nil || fi.Mode().Type() != os.ModeSocket {
			t.Fatalf("%s on the host: %v %v", p, fi, err)
		}
	}
	out := run(t, sb, "", "python3", "-c", `import socket
a = socket.socket(socket.AF_UNIX); a.bind("\0cordon-abstract"); print(a.getsockname())
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(1); print(t.getsockname()[0])`)
	if out.res.ExitCode != 0 || out.stdout != "b'\\x00cordon-abstract'\n127.0.0.1\n" {
		t.Fatalf("abstract and TCP binds: %+v %q %s", out.res, out.stdout, out.stderr)
	}
}

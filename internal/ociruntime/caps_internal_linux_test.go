package ociruntime

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// TestBoundaryBreakingCaps: the capabilities that would let a container's
// own processes undo its boundary refuse the run.cordon annotations;
// CAP_SYS_PTRACE only with the host's PID namespace.
func TestBoundaryBreakingCaps(t *testing.T) {
	withCaps := func(pidns bool, caps ...string) *specs.Spec {
		s := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}, Linux: &specs.Linux{}}
		if pidns {
			s.Linux.Namespaces = []specs.LinuxNamespace{{Type: specs.PIDNamespace}}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    *specs.Spec
		want []string
	}{
		{"default caps", withCaps(true, "CAP_CHOWN", "CAP_FOWNER", "CAP_NET_BIND_SERVICE"), nil},
		{"sys_admin", withCaps(true, "CAP_SYS_ADMIN"), []string{"CAP_SYS_ADMIN"}},
		{"module and rawio", withCaps(true, "CAP_SYS_MODULE", "CAP_SYS_RAWIO"), []string{"CAP_SYS_MODULE", "CAP_SYS_RAWIO"}},
		{"ptrace in its own pid namespace", withCaps(true, "CAP_SYS_PTRACE"), nil},
		{"ptrace with the host's pids", withCaps(false, "CAP_SYS_PTRACE"), []string{"CAP_SYS_PTRACE"}},
		{"no process", &specs.Spec{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range boundaryBreakingCaps(tc.s) {
				got = append(got, c.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			err := refuseUnenforced(Boundary{}, tc.s)
			if (err != nil) != (len(tc.want) > 0) {
				t.Errorf("refuseUnenforced = %v, want a refusal: %v", err, len(tc.want) > 0)
			}
		})
	}
}

// TestRuntimePeerRefusesOtherUsers: the broker's socket takes a seccomp
// descriptor only from the runtime's own user; a connection from another
// uid is refused (root: the other user is uid 4242 through setpriv).
func TestRuntimePeerRefusesOtherUsers(t *testing.T) {
	// Not t.TempDir(): its parent is 0700, which uid 4242 cannot enter.
	dir, err := os.MkdirTemp("", "cordon-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "b.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	connect := func(cmd *exec.Cmd) error {
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			// A client that exits without connecting ends the accept.
			cmd.Wait()
			close(done)
		}()
		accepted := make(chan *net.UnixConn, 1)
		go func() {
			c, _ := l.AcceptUnix()
			accepted <- c
		}()
		var c *net.UnixConn
		select {
		case c = <-accepted:
		case <-done:
			select {
			case c = <-accepted:
			default:
				t.Fatalf("the client exited without connecting: %s", stderr.String())
			}
		}
		defer c.Close()
		return runtimePeer(c)
	}
	py := "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)"
	// The system's python: another user cannot run one below root's home.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := connect(exec.Command(python, "-c", py, sock)); err != nil {
		t.Errorf("the runtime's own user was refused: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("another uid needs root (setpriv)")
	}
	err = connect(exec.Command("setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", python, "-c", py, sock))
	if err == nil || !strings.Contains(err.Error(), "uid 4242") {
		t.Errorf("a connection from uid 4242 = %v, want refused naming it", err)
	}
}

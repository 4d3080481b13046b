package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationBrokerCwdTracked: a relative path starts at the kernel's
// working directory of the caller at the call (read through /proc/TID/cwd
// per call; see internal/broker/cwd_linux.go). A relative create lands
// where the kernel would put it after a cd, after a cd into a directory
// the command renamed, in the directory the command is in when the broker
// renames that directory under it, and after another thread of the
// process changed the directory they share; with and without strict_deny.
func TestIntegrationBrokerCwdTracked(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	script := `set -e
mkdir a b d
cd a; : > x; cd ../b; : > y
cd ..; mv b c; cd c; : > z
cd ../d; : > 1; mv ../d ../e; : > 2; mkdir m; rmdir ../e/m; : > 3
cd ..
` + py(`import threading
os.close(os.open("p0", os.O_CREAT | os.O_WRONLY, 0o644))
t = threading.Thread(target=os.chdir, args=("a",)); t.start(); t.join()
os.close(os.open("p1", os.O_CREAT | os.O_WRONLY, 0o644))
if os.fork() == 0:
    os.chdir("/")
    os._exit(0)
os.wait()
os.close(os.open("p2", os.O_CREAT | os.O_WRONLY, 0o644))`)
	want := []string{"a/x", "c/y", "c/z", "e/1", "e/2", "e/3", "p0", "a/p1", "a/p2"}
	gone := []string{"b", "d", "x", "y", "z", "1", "2", "3", "p1", "p2", "c/x", "e/m"}
	inBothModes(t, func(t *testing.T, sb *spec.Sandbox) {
		out := run(t, sb, "", sh(script)...)
		if out.res.ExitCode != 0 {
			t.Fatalf("%+v %s", out.res, out.stderr)
		}
		for _, p := range want {
			if _, err := os.Lstat(filepath.Join(sb.Root, p)); err != nil {
				t.Errorf("%s was not created where the kernel would create it: %v", p, err)
			}
		}
		for _, p := range gone {
			if _, err := os.Lstat(filepath.Join(sb.Root, p)); err == nil {
				t.Errorf("%s exists: a relative path was resolved from a working directory kept too long", p)
			}
		}
	})
}

// TestIntegrationBrokerCwdMovedByHost is the kernel-path rule on the
// caller's working directory (internal/broker/cwd_linux.go): the host (or another
// sandbox on the same workspace: the broker sees neither) renames the
// command's working directory away and puts a symlink to a protected
// directory at its old path. The command's next relative create lands in
// the renamed directory, as the kernel's own would, and nothing is made
// in the protected directory; with and without strict_deny. (A kept path
// resolved it from the old path, through the symlink, into the protected
// directory, where it was refused.)
func TestIntegrationBrokerCwdMovedByHost(t *testing.T) {
	inBothModes(t, func(t *testing.T, sb *spec.Sandbox) {
		ws := sb.Root
		sb.Protect = append(sb.Protect, ws+"/**/guard")
		script := `set -e
mkdir w; cd w; : > 1
while [ ! -e ` + ws + `/go ]; do sleep 0.02; done
: > 2`
		done := make(chan struct{})
		hostDone := make(chan error, 1)
		go func() {
			for {
				select {
				case <-done:
					hostDone <- nil
					return
				default:
				}
				if _, err := os.Lstat(filepath.Join(ws, "w/1")); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			err := os.Rename(filepath.Join(ws, "w"), filepath.Join(ws, "w2"))
			if err == nil {
				err = os.Mkdir(filepath.Join(ws, "guard"), 0o755)
			}
			if err == nil {
				err = os.Symlink("guard", filepath.Join(ws, "w"))
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
			}
			hostDone <- err
		}()
		out := run(t, sb, "", sh(script)...)
		close(done)
		if err := <-hostDone; err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(filepath.Join(ws, "guard"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Fatalf("the protected directory has %d entries: %v", len(ents), ents[0].Name())
		}
		_, err = os.Lstat(filepath.Join(ws, "w2/2"))
		if out.res.ExitCode != 0 || err != nil {
			t.Fatalf("the create did not land in the renamed directory, where the kernel puts it: %+v %v %s", out.res, err, out.stderr)
		}
	})
}

// inBothModes runs f as a subtest on a new sandbox in the default mode and
// again with strict_deny.
func inBothModes(t *testing.T, f func(t *testing.T, sb *spec.Sandbox)) {
	t.Helper()
	for _, strict := range []bool{false, true} {
		name := "default"
		if strict {
			name = "strict_deny"
		}
		t.Run(name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			f(t, sb)
		})
	}
}

package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// onOwnFS runs f on a thread of its own with a working directory of its
// own (CLONE_FS unshared), as a worker's calls run; the thread ends with
// f.
func onOwnFS(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends here
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			done <- err
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("unshare(CLONE_FS): %v", err)
	}
}

// cwdOf makes dir this thread's working directory and returns its path as
// call.dirPath reads it, false where it falls back to the readlink.
func cwdOf(dir int) (string, bool) {
	if unix.Fchdir(dir) != nil {
		return "", false
	}
	return cwdPath()
}

// TestBrokerDirPathIsFdPath: the path a worker reads for a directory by
// fchdir and getcwd (call.dirPath) is, in every case, what the readlink of
// /proc/self/fd/N gives (fdPath), the path every decision is made on: a
// directory of this mount namespace; one of another namespace (a
// sandbox's, which getcwd marks "(unreachable)"); one the thread may not
// search (rootless: fchdir refuses, the readlink is used); and, as
// errors both, a removed directory and one whose name ends in
// " (deleted)" (refused, fail closed, as readlinkPath refuses it).
func TestBrokerDirPathIsFdPath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "locked", "gone", "x (deleted)"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(base, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(base, "locked"), 0o755) //nolint:errcheck // t.TempDir's cleanup needs it

	other := otherNamespaceDir(t)
	// fast: the path is read by fchdir and getcwd, not the readlink
	// (root may search any directory; uid 4242 not "locked").
	rows := []struct {
		name, path    string
		wantErr, fast bool
	}{
		{"this-namespace", filepath.Join(base, "a/b/c"), false, true},
		{"other-namespace", other, false, true},
		{"not-searchable", filepath.Join(base, "locked"), false, os.Geteuid() == 0},
		{"removed", filepath.Join(base, "gone"), true, false},
		{"named-deleted", filepath.Join(base, "x (deleted)"), true, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			fd, err := unix.Open(r.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if r.name == "removed" {
				if err := os.Remove(r.path); err != nil {
					t.Fatal(err)
				}
			}
			want, wantErr := fdPath(fd)
			var got string
			var gotErr error
			var fast bool
			onOwnFS(t, func() {
				got, gotErr = (&call{ownFS: true}).dirPath(fd)
				_, fast = cwdOf(fd)
			})
			if fast != r.fast {
				t.Errorf("read by fchdir and getcwd: %v, want %v", fast, r.fast)
			}
			if (wantErr != nil) != r.wantErr || (gotErr != nil) != r.wantErr {
				t.Fatalf("errors: readlink %v, dirPath %v; want an error: %v", wantErr, gotErr, r.wantErr)
			}
			if got != want {
				t.Fatalf("dirPath = %q, the readlink of /proc/self/fd gives %q", got, want)
			}
			if r.name == "other-namespace" && got == r.path {
				t.Fatalf("dirPath = %q: the host path, not the other namespace's", got)
			}
		})
	}
}

// otherNamespaceDir returns a directory of another mount namespace,
// opened through its /proc/PID/root: a child in a namespace of its own
// with a tmpfs at a directory of this test's (root), or a user namespace
// with its mount namespace (rootless).
func otherNamespaceDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	script := "mount -t tmpfs none " + dir + " && mkdir -p " + dir + "/in/ns && echo ready && exec sleep 600"
	cmd := exec.Command("unshare", append(args, "sh", "-c", script)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no mount namespace for a test (unshare): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if n, err := out.Read(buf); err != nil || string(buf[:n]) != "ready\n" {
		t.Fatalf("the namespace's child did not start: %q %v", buf, err)
	}
	return "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/root" + dir + "/in/ns"
}

// TestBrokerDirPathAfterHostRename: the read-back after a create
// (call.moved), which reads the directory's path again without setting
// the working directory again (the call set it to that descriptor
// already), sees the directory where it is now: renamed by the host
// between the two reads, it is found moved (and at its new path); removed
// and another directory made at its name, moved too; left alone, not.
func TestBrokerDirPathAfterHostRename(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name  string
		host  func(dir string) error
		moved bool
	}{
		{"left-alone", func(string) error { return nil }, false},
		{"renamed", func(dir string) error { return os.Rename(dir, dir+".away") }, true},
		{"replaced", func(dir string) error {
			if err := os.Rename(dir, dir+".away"); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o755)
		}, true},
		{"replaced-by-symlink", func(dir string) error {
			if err := os.Rename(dir, dir+".away"); err != nil {
				return err
			}
			return os.Symlink(dir+".away", dir)
		}, true},
		{"removed", os.Remove, true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dir := filepath.Join(base, r.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			c := &call{ownFS: true}
			c.keep(fd)
			defer c.close()
			var first, again string
			var firstErr, hostErr, againErr error
			var moved bool
			onOwnFS(t, func() {
				first, firstErr = c.dirPath(fd)
				hostErr = r.host(dir)
				moved = c.moved(loc{dir: fd, path: dir + "/f", name: "f"})
				again, againErr = c.dirPath(fd)
			})
			if firstErr != nil || hostErr != nil {
				t.Fatalf("first read %v, the host's change %v", firstErr, hostErr)
			}
			if first != dir {
				t.Fatalf("first read %q, want %q", first, dir)
			}
			if moved != r.moved {
				t.Fatalf("moved = %v, want %v", moved, r.moved)
			}
			want, wantErr := fdPath(fd)
			if again != want || (againErr != nil) != (wantErr != nil) {
				t.Fatalf("read again: %q %v; the readlink gives %q %v", again, againErr, want, wantErr)
			}
		})
	}
}

package ociruntime_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"
)

// ctrNamespace is the containerd namespace of the tests: the shim's state
// root and the cgroups are named after it.
const ctrNamespace = "cordon-oci-test"

// containerd is a containerd of the test's own (root, state and socket in
// its folder), reached with ctr: the runc v2 shim with --runc-binary, the
// path a Kubernetes RuntimeClass uses.
type containerd struct {
	dir, sock string
	before    snapshot
}

func newContainerd(t *testing.T) *containerd {
	t.Helper()
	requireTool(t, "ctr")
	bin := requireTool(t, "containerd")
	dir := t.TempDir()
	c := &containerd{dir: dir, sock: filepath.Join(dir, "sock"), before: takeSnapshot(t)}
	cfg := "version = 2\nroot = \"" + filepath.Join(dir, "root") + "\"\nstate = \"" + filepath.Join(dir, "state") +
		"\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \"" + c.sock + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
		takeSnapshot(t).assertNothingNew(t, c.before)
		assertNoProcess(t, testMarker)
		assertNoBroker(t)
		// The namespace's own parents, which containerd and the shim make
		// and leave, as under runc; they are empty now.
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + ctrNamespace)
		for _, d := range append(dirs, "/sys/fs/cgroup/"+ctrNamespace, "/run/containerd/runc/"+ctrNamespace) {
			_ = os.Remove(d)
		}
	})
	// containerd is up when ctr gets an answer; a loaded machine may take
	// a while, so the wait is generous.
	for i := 0; ; i++ {
		if r := c.ctr(t, "version"); r.code == 0 {
			break
		}
		if i == 600 {
			log, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("containerd did not answer in 60s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c
}

func (c *containerd) ctr(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, nil, "ctr", append([]string{"--address", c.sock, "--namespace", ctrNamespace}, args...)...)
}

// runArgs starts `ctr run` with cordon-oci as the shim's runc binary, on
// the test's root filesystem.
func runArgs(extra ...string) []string {
	args := append([]string{"run", "--runc-binary", ociBin}, extra...)
	return append(args, "--rootfs", rootfs)
}

// TestOCICtrRun runs containers through containerd's runc v2 shim with
// cordon-oci: exit codes and output are runc's.
func TestOCICtrRun(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	tests := []struct {
		name     string
		cmd      string
		wantCode int
		wantOut  string
	}{
		{"success", "echo hello", 0, "hello\n"},
		{"exit code", "exit 7", 7, ""},
		{"a child killed by a signal", "sh -c 'kill -9 $$'; exit $?", 137, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "run" + string(rune('a'+i))
			r := c.ctr(t, append(runArgs("--rm"), id, "/bin/sh", "-c", tc.cmd)...)
			if r.code != tc.wantCode || r.stdout != tc.wantOut {
				t.Errorf("exit %d stdout %q, want %d %q\nstderr: %s", r.code, r.stdout, tc.wantCode, tc.wantOut, r.stderr)
			}
		})
	}
}

// TestOCICtrTTY runs a container with a TTY through the shim (the console
// socket path): ctr itself needs a terminal, so it gets a pty.
func TestOCICtrTTY(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	master, slavePath, err := console.NewPty()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	slave, err := os.OpenFile(slavePath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(master)
		out <- string(b)
	}()
	cmd := exec.Command("ctr", append([]string{"--address", c.sock, "--namespace", ctrNamespace},
		append(runArgs("--rm", "-t"), "tty1", "/bin/sh", "-c", "tty; exit 6")...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = cmd.Run()
	slave.Close()
	var code int
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got := <-out
	if code != 6 || !strings.Contains(got, "/dev/pts/0") {
		t.Errorf("exit %d output %q, want 6 and /dev/pts/0", code, got)
	}
}

// TestOCICtrLifecycle runs a task detached, execs into it, kills and
// deletes it, and finds nothing left (processes, shim state, cgroups).
func TestOCICtrLifecycle(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	if r := c.ctr(t, append(runArgs("-d"), "life", "/bin/sleep", testMarker)...); r.code != 0 {
		t.Fatalf("run -d: %d %s", r.code, r.stderr)
	}
	if r := c.ctr(t, "task", "exec", "--exec-id", "e1", "life", "/bin/sh", "-c", "echo in; exit 9"); r.code != 9 || r.stdout != "in\n" {
		t.Errorf("exec: exit %d stdout %q, want 9 in (%s)", r.code, r.stdout, r.stderr)
	}
	if r := c.ctr(t, "task", "ps", "life"); r.code != 0 || len(strings.Fields(r.stdout)) < 3 {
		t.Errorf("task ps: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := c.ctr(t, "task", "kill", "--signal", "SIGKILL", "life"); r.code != 0 {
		t.Fatalf("kill: %d %s", r.code, r.stderr)
	}
	for i := 0; ; i++ {
		r := c.ctr(t, "task", "ls")
		if strings.Contains(r.stdout, "STOPPED") {
			break
		}
		if i == 600 {
			t.Fatalf("the task did not stop in 60s: %s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := c.ctr(t, "task", "rm", "life"); r.code != 0 {
		t.Fatalf("task rm: %d %s", r.code, r.stderr)
	}
	if r := c.ctr(t, "container", "rm", "life"); r.code != 0 {
		t.Fatalf("container rm: %d %s", r.code, r.stderr)
	}
}

// TestOCICtrDeny: the annotations work through the shim as through
// podman, and a bad one fails the task's create.
func TestOCICtrDeny(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	r := c.ctr(t, append(runArgs("--rm", "--annotation", "run.cordon.deny=/etc/secret", "--annotation", "run.cordon.protect=/etc/app.conf"),
		"deny1", "/bin/sh", "-c", "cat /etc/secret; echo y >> /etc/app.conf; cat /etc/app.conf")...)
	if strings.Contains(r.stdout, "topsecret") || strings.Count(r.stderr, "Permission denied") != 2 {
		t.Errorf("stdout %q stderr %q; want the secret hidden and the write refused", r.stdout, r.stderr)
	}
	r = c.ctr(t, append(runArgs("--rm", "--annotation", "run.cordon.deny=secret"), "deny2", "/bin/true")...)
	if r.code == 0 || !strings.Contains(r.stderr, "annotation run.cordon.deny") {
		t.Errorf("exit %d stderr %q; want the create refused naming the annotation", r.code, r.stderr)
	}
	c.ctr(t, "container", "rm", "deny2")
}

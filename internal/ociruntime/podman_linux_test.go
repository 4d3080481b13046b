package ociruntime_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// podman is one podman with storage, state and cordon-oci's --root of its
// own under a test's temporary folder, so that what a test leaves can be
// checked and nothing is shared.
type podman struct {
	dir    string
	base   []string
	image  string
	before snapshot
	// auditDir is cordon-oci's --audit-dir: audit logs go below it.
	auditDir string
}

// requireTool skips t without the tool, and fails it under CI=true, where
// hack/deps.sh installs it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	testenv.SkipIfShort(t, "starts containers with cordon-oci")
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI=true forbids skipping (make deps installs it)", name)
	}
	t.Skipf("%s is not installed (make deps installs podman and containerd); the OCI runtime tests need it", name)
	return ""
}

// requirePodmanUser: podman's tests run as root, and as a user in the
// rootless lane (CORDON_ROOTLESS=1, hack/test-rootless.sh), where podman
// runs rootless and cordon-oci inside podman's user namespace.
func requirePodmanUser(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "starts containers with cordon-oci")
	if os.Geteuid() != 0 && os.Getenv("CORDON_ROOTLESS") != "1" {
		requireRoot(t)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "starts containers with cordon-oci")
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" && os.Getenv("CORDON_ROOTLESS") != "1" {
		t.Fatal("needs root, and CI=true forbids skipping")
	}
	t.Skip("needs root: the root pass of make test runs it")
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	requireTool(t, "podman")
	// podman refuses a runroot longer than 50 characters: t.TempDir's
	// names are too long for it.
	dir, err := os.MkdirTemp("", "oci")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &podman{dir: dir, image: "localhost/cordon-oci-test:1", auditDir: filepath.Join(dir, "audit")}
	p.base = []string{"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "--storage-driver", "vfs", "--events-backend", "none",
		"--cgroup-manager", "cgroupfs", "--runtime", ociBin, "--runtime-flag", "audit-dir=" + p.auditDir}
	p.before = takeSnapshot(t)
	tarball := filepath.Join(dir, "rootfs.tar")
	if out, err := exec.Command("tar", "--owner=0", "--group=0", "--numeric-owner", "-C", rootfs, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if r := p.run(t, "import", tarball, p.image); r.code != 0 {
		t.Fatalf("podman import: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() {
		p.run(t, "rm", "--all", "--force", "--time", "0")
		p.stopPause(t)
		p.assertNoLeftovers(t)
		// podman's own parents (its conmon cgroup and libpod_parent), which
		// it makes and leaves, as under runc; removed when empty.
		for _, g := range []string{"/sys/fs/cgroup/*/libpod_parent/conmon", "/sys/fs/cgroup/*/libpod_parent"} {
			dirs, _ := filepath.Glob(g)
			for _, d := range dirs {
				_ = os.Remove(d)
			}
		}
	})
	return p
}

// stopPause ends rootless podman's pause process, which holds its user
// namespace for the podman that started it (its PID is in the tmpdir).
func (p *podman) stopPause(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "tmp", "pause.pid"))
	if err != nil {
		return // not rootless, or none was started
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Errorf("pause.pid holds %q", b)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// stateRoot is cordon-oci's default --root, which podman's cleanup
// process uses (it is not given podman's --runtime-flag): a user's is in
// $XDG_RUNTIME_DIR.
func stateRoot() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && os.Geteuid() != 0 {
		return filepath.Join(x, "cordon-oci")
	}
	return "/run/cordon-oci"
}

type result struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, stdin *os.File, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return r
}

func (p *podman) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, nil, "podman", append(append([]string{}, p.base...), args...)...)
}

// runArgs are the flags of every container: no network, so that no
// bridge is made, and as root this host's limits (podman's defaults are
// above them).
func (p *podman) runArgs(extra ...string) []string {
	args := []string{"run", "--network", "none"}
	if os.Geteuid() == 0 {
		args = append(args, "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=20000:20000")
	}
	return append(args, extra...)
}

// assertNoLeftovers checks that nothing of the test's containers is left:
// no new state directory under cordon-oci's --root, no new cgroup, no
// process with the test's marker, no mount under the test's folder.
func (p *podman) assertNoLeftovers(t *testing.T) {
	t.Helper()
	takeSnapshot(t).assertNothingNew(t, p.before)
	assertNoProcess(t, testMarker)
	assertNoBroker(t)
	assertNoMount(t, p.dir)
}

// snapshot is what exists of containers on the host: the state
// directories in cordon-oci's and the containerd shim's roots, and the
// cgroups podman and containerd place containers in.
type snapshot map[string]bool

var snapshotGlobs = []string{
	stateRoot() + "/*",
	"/run/containerd/runc/*/*",
	"/sys/fs/cgroup/*/libpod_parent/*",
	"/sys/fs/cgroup/libpod_parent/*",
	"/sys/fs/cgroup/*/cordon-oci-test*/*",
	"/sys/fs/cgroup/cordon-oci-test*/*",
}

func takeSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for _, g := range snapshotGlobs {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			if filepath.Base(p) == "conmon" {
				continue // podman's own cgroup for every conmon, kept as under runc
			}
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				s[p] = true
			}
		}
	}
	return s
}

func (s snapshot) assertNothingNew(t *testing.T, before snapshot) {
	t.Helper()
	for p := range s {
		if !before[p] {
			t.Errorf("a container's state or cgroup is left: %s", p)
		}
	}
}

// testMarker is an argument of the long-lived test processes, to find
// any left behind.
const testMarker = "7357"

func assertNoProcess(t *testing.T, marker string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 2 && filepath.Base(args[0]) == "sleep" && args[1] == marker {
			t.Errorf("a container's process is left: %s %v", c, args)
		}
	}
}

// assertNoBroker checks that no container's broker supervisor (cordon-oci
// __broker) outlived its container.
func assertNoBroker(t *testing.T) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 2 && args[0] == "cordon-oci" && slices.Contains(args, "__broker") {
			t.Errorf("a broker supervisor is left: %s %v", c, args)
		}
	}
}

func assertNoMount(t *testing.T, under string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, under) {
			t.Errorf("a mount is left: %s", l)
		}
	}
}

// TestOCIPodmanRun runs containers with podman run --rm and cordon-oci:
// the exit status, the output and a TTY are runc's.
func TestOCIPodmanRun(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	tests := []struct {
		name     string
		flags    []string
		cmd      string
		wantCode int
		wantOut  string
	}{
		{"success", nil, "echo hello", 0, "hello\n"},
		{"exit code", nil, "exit 3", 3, ""},
		{"a child killed by a signal", nil, "sh -c 'kill -9 $$'; exit $?", 137, ""},
		{"stderr is not stdout", nil, "echo err >&2; echo out", 0, "out\n"},
		{"a tty", []string{"-t"}, "tty; exit 5", 5, "/dev/pts/0\r\n"},
		{"no tty without -t", nil, "tty", 1, "not a tty\n"},
		{"stdin", []string{"-i"}, "cat", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := p.runArgs(append([]string{"--rm"}, tc.flags...)...)
			args = append(args, p.image, "sh", "-c", tc.cmd)
			r := p.run(t, args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.wantCode, r.stdout, r.stderr)
			}
			if r.stdout != tc.wantOut {
				t.Errorf("stdout %q, want %q (stderr %q)", r.stdout, tc.wantOut, r.stderr)
			}
		})
	}
}

// TestOCIPodmanLifecycle runs a container detached, execs into it (exit
// status, a TTY), stops and removes it, and finds nothing left.
func TestOCIPodmanLifecycle(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	r := p.run(t, append(p.runArgs("-d", "--name", "life"), p.image, "sleep", testMarker)...)
	if r.code != 0 {
		t.Fatalf("run -d: %d\n%s", r.code, r.stderr)
	}
	if r := p.run(t, "exec", "life", "sh", "-c", "echo in; exit 4"); r.code != 4 || r.stdout != "in\n" {
		t.Errorf("exec: exit %d stdout %q, want 4 and \"in\\n\"\n%s", r.code, r.stdout, r.stderr)
	}
	if r := p.run(t, "exec", "-t", "life", "tty"); r.code != 0 || !strings.HasPrefix(r.stdout, "/dev/pts/") {
		t.Errorf("exec -t: exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := p.run(t, "exec", "-d", "life", "sleep", testMarker); r.code != 0 {
		t.Errorf("exec -d: exit %d\n%s", r.code, r.stderr)
	}
	st := runCmd(t, nil, ociBin, "list", "--format", "json")
	if st.code != 0 || !strings.Contains(st.stdout, `"status":"running"`) {
		t.Errorf("cordon-oci list: %d %s %s", st.code, st.stdout, st.stderr)
	}
	// sleep is PID 1 and ignores SIGTERM: stop ends with SIGKILL.
	if r := p.run(t, "stop", "--time", "1", "life"); r.code != 0 {
		t.Fatalf("stop: %d\n%s", r.code, r.stderr)
	}
	if r := p.run(t, "inspect", "--format", "{{.State.ExitCode}}", "life"); strings.TrimSpace(r.stdout) != "137" {
		t.Errorf("exit code after stop: %q, want 137 (%s)", r.stdout, r.stderr)
	}
	if r := p.run(t, "rm", "life"); r.code != 0 {
		t.Fatalf("rm: %d\n%s", r.code, r.stderr)
	}
	p.assertNoLeftovers(t)
}

// TestOCIPodmanKill kills a detached container with a signal it does not
// ignore; podman wait reports the signal's status.
func TestOCIPodmanKill(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	r := p.run(t, append(p.runArgs("-d", "--name", "k"), p.image, "sh", "-c", "trap 'exit 42' USR1; while :; do sleep 1; done")...)
	if r.code != 0 {
		t.Fatalf("run -d: %d\n%s", r.code, r.stderr)
	}
	if r := p.run(t, "kill", "--signal", "USR1", "k"); r.code != 0 {
		t.Fatalf("kill: %d\n%s", r.code, r.stderr)
	}
	if r := p.run(t, "wait", "k"); strings.TrimSpace(r.stdout) != "42" {
		t.Errorf("wait: %q, want 42 (%s)", r.stdout, r.stderr)
	}
	if r := p.run(t, "rm", "k"); r.code != 0 {
		t.Fatalf("rm: %d\n%s", r.code, r.stderr)
	}
}

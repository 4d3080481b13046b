package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestIntegrationBrokerFdMetaFastPath is the security property of the
// descriptor fast path (fchown, futimens and an fchmod with no execute,
// setid or group/other write bit stay in the kernel in the default mode):
// on a protected file that exists at start, reached through a descriptor
// the command opened itself (for reading), the kernel refuses each of them
// (EROFS: the file is a read-only mount); on a protect pattern's match
// that no mount covers, an fchmod that would make it executable, writable
// by others or setid is still brokered and refused. The host file is
// unchanged after each.
func TestIntegrationBrokerFdMetaFastPath(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
	hook := filepath.Join(ws, ".git/hooks/pre-commit")
	cfg := filepath.Join(ws, ".git/config")
	sub := filepath.Join(ws, "sub/.git/hooks/pre-commit")
	for _, p := range []string{hook, cfg, sub} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]string{}
	for _, p := range []string{hook, cfg, sub} {
		// Read once first: cordon reads the config at start, and the first
		// read after a write moves the access time (relatime).
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		before[p] = metaState(t, p)
	}
	// fd opens the file for reading; the call's errno is the exit code.
	fd := func(file, call string) string {
		return py("import sys\nfd = os.open(\"" + file + "\", os.O_RDONLY)\ntry:\n    " + call +
			"\nexcept OSError as e:\n    sys.exit(e.errno)")
	}
	const erofs, eperm = 30, 1
	rows := []struct {
		name, script string
		exit         int    // the errno, when the kernel refuses
		denied       string // the path the broker refuses, when it does
	}{
		{"read-only-mount-fchmod", fd(".git/hooks/pre-commit", "os.fchmod(fd, 0o600)"), erofs, ""},
		{"read-only-mount-fchown", fd(".git/config", "os.fchown(fd, os.getuid(), os.getgid())"), erofs, ""},
		{"read-only-mount-futimens", fd(".git/config", "os.utime(fd, (1, 1))"), erofs, ""},
		{"pattern-fchmod-exec", fd("sub/.git/hooks/pre-commit", "os.fchmod(fd, 0o744)"), 0, sub},
		{"pattern-fchmod-group-write", fd("sub/.git/hooks/pre-commit", "os.fchmod(fd, 0o664)"), 0, sub},
		{"pattern-fchmod-setuid", fd("sub/.git/hooks/pre-commit", "os.fchmod(fd, 0o4644)"), eperm, ""},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", sh(tc.script)...)
			switch {
			case tc.denied != "":
				if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.denied {
					t.Errorf("want sandbox_denied on %s, got %+v %s", tc.denied, out.res, out.stderr)
				}
			case out.res.ExitCode != tc.exit:
				t.Errorf("want errno %d from the kernel, got %+v %s", tc.exit, out.res, out.stderr)
			}
			for p, want := range before {
				if got := metaState(t, p); got != want {
					t.Fatalf("%s changed on the host:\n%s\n%s", p, want, got)
				}
			}
		})
	}
}

// TestIntegrationBrokerUmaskTracked: the broker creates with the caller's
// umask, which it keeps per thread instead of reading it per create
// (broker.umasks): a umask set by the shell, in a subshell, and by another
// thread of a process that had created with the old one (the kept value
// must be dropped) each apply to the next create and mkdir.
func TestIntegrationBrokerUmaskTracked(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	script := `set -e
umask 022; : > a; umask 077; : > b; (umask 027; : > c); : > d; mkdir e
` + py(`import threading
os.close(os.open("f0", os.O_CREAT | os.O_WRONLY, 0o666))
t = threading.Thread(target=os.umask, args=(0o007,)); t.start(); t.join()
os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o666)); os.mkdir("g", 0o777)`)
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 {
		t.Fatalf("%+v %s", out.res, out.stderr)
	}
	for name, want := range map[string]os.FileMode{
		"a": 0o644, "b": 0o600, "c": 0o640, "d": 0o600, "e": 0o700, "f0": 0o600, "f": 0o660, "g": 0o770,
	} {
		st, err := os.Stat(filepath.Join(sb.Root, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
}

package linux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// metaState is what a metadata call could change on the host: mode,
// owner, times and extended attributes (of the file itself, not followed).
func metaState(t *testing.T, p string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		n = 0
	}
	return fmt.Sprintf("mode %o uid %d gid %d mtime %d.%d atime %d.%d xattrs %q",
		st.Mode, st.Uid, st.Gid, st.Mtim.Sec, st.Mtim.Nsec, st.Atim.Sec, st.Atim.Nsec, buf[:n])
}

// py runs a Python snippet; o and l are os and a ctypes handle on libc.
func py(code string) string {
	return "python3 -c 'import os, ctypes; l = ctypes.CDLL(None, use_errno=True)\n" + code + "'"
}

// TestIntegrationBrokerMetadataRefused is the security property "a
// protected or denied file's mode, owner, times and extended attributes
// never change": by path (chmod, chown, lchown, utimensat, utimes,
// futimesat, utime, setxattr, lsetxattr, removexattr, lremovexattr,
// through a symlink too) and on a descriptor the command opened for
// reading (fchmod, fchown, futimens, fsetxattr, fremovexattr), on a
// protect pattern's match that no mount covers and on a deny pattern's
// match. Each call is refused with the file's path from the broker's
// record, and the host file is unchanged. The time and owner calls, by
// path and on a descriptor, stay in the kernel in the default mode (see
// TestIntegrationBrokerFdMetaFastPath and
// TestIntegrationBrokerPathMetaFastPath): their rows run with
// strict_deny, which notifies them; the chmod rows add an execute bit,
// which is notified in both modes.
func TestIntegrationBrokerMetadataRefused(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = append(sb.Protect, ws+"/**/.git/hooks", ws+"/**/.git/config")
	sb.Deny = []string{ws + "/**/*.pem"}
	hook := filepath.Join(ws, "sub/.git/hooks/pre-commit")
	cfg := filepath.Join(ws, "sub/.git/config")
	key := filepath.Join(ws, "key.pem")
	for p, body := range map[string]string{hook: "#!/bin/sh\ntouch /tmp/pwned\n", cfg: "[core]\n", key: "SECRET\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub/.git/hooks/pre-commit", filepath.Join(ws, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(hook, "user.keep", []byte("1"), 0); err != nil {
		t.Fatalf("the host file system has no user xattrs: %v", err)
	}
	before := map[string]string{}
	for _, p := range []string{hook, cfg, key} {
		before[p] = metaState(t, p)
	}
	h, c := "sub/.git/hooks/pre-commit", "sub/.git/config"
	type row struct {
		name, script, path string
		amd64              bool
	}
	strict := map[string]bool{"fchown": true, "futimens": true, "fchownat": true, "fchownat-nofollow": true,
		"utimensat": true, "utimensat-now": true, "utimensat-deny": true,
		"chown": true, "lchown": true, "utime": true, "utimes": true, "futimesat": true}
	rows := []row{
		{"chmod", "chmod 755 " + h, hook, false},
		{"chmod-symlink", "chmod 755 lnk", hook, false},
		{"chmod-deny", "chmod 777 key.pem", key, false},
		{"fchmodat2-empty-path", py("fd = os.open(\"" + h + "\", os.O_PATH)\nimport sys\nr = l.syscall(452, fd, b\"\", 0o755, 0x1000); sys.exit(ctypes.get_errno() if r else 0)"), hook, false},
		{"fchmod", py("fd = os.open(\"" + h + "\", os.O_RDONLY); os.fchmod(fd, 0o755)"), hook, false},
		{"fchown", py("fd = os.open(\"" + c + "\", os.O_RDONLY); os.fchown(fd, os.getuid(), os.getgid())"), cfg, false},
		{"fchownat", py("os.chown(\"" + c + "\", os.getuid(), os.getgid())"), cfg, false},
		{"fchownat-nofollow", py("os.chown(\"" + h + "\", -1, os.getgid(), follow_symlinks=False)"), hook, false},
		{"utimensat", py("os.utime(\"" + h + "\", (1, 1))"), hook, false},
		{"utimensat-now", "touch -c -m lnk", hook, false},
		{"futimens", py("fd = os.open(\"" + c + "\", os.O_RDONLY); os.utime(fd, (1, 1))"), cfg, false},
		{"utimensat-deny", py("os.utime(\"key.pem\", (1, 1))"), key, false},
		{"setxattr", py("os.setxattr(\"" + h + "\", \"user.x\", b\"1\")"), hook, false},
		{"lsetxattr", py("os.setxattr(\"" + c + "\", \"user.x\", b\"1\", follow_symlinks=False)"), cfg, false},
		{"fsetxattr", py("fd = os.open(\"" + c + "\", os.O_RDONLY); os.setxattr(fd, \"user.x\", b\"1\")"), cfg, false},
		{"removexattr", py("os.removexattr(\"lnk\", \"user.keep\")"), hook, false},
		{"lremovexattr", py("os.removexattr(\"" + h + "\", \"user.keep\", follow_symlinks=False)"), hook, false},
		{"fremovexattr", py("fd = os.open(\"" + h + "\", os.O_RDONLY); os.removexattr(fd, \"user.keep\")"), hook, false},
		// The calls glibc no longer makes, by number (x86-64): chown 92,
		// lchown 94, utime 132, utimes 235, futimesat 261.
		{"chown", py("import sys; r = l.syscall(92, b\"" + c + "\", os.getuid(), os.getgid()); sys.exit(ctypes.get_errno() if r else 0)"), cfg, true},
		{"lchown", py("import sys; r = l.syscall(94, b\"" + h + "\", os.getuid(), os.getgid()); sys.exit(ctypes.get_errno() if r else 0)"), hook, true},
		{"utime", py("import sys; r = l.syscall(132, b\"" + h + "\", None); sys.exit(ctypes.get_errno() if r else 0)"), hook, true},
		{"utimes", py("import sys; r = l.syscall(235, b\"" + c + "\", None); sys.exit(ctypes.get_errno() if r else 0)"), cfg, true},
		{"futimesat", py("import sys; r = l.syscall(261, -100, b\"" + h + "\", None); sys.exit(ctypes.get_errno() if r else 0)"), hook, true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			if tc.amd64 && runtime.GOARCH != "amd64" {
				t.Skip("x86-64 only")
			}
			s := *sb
			s.StrictDeny = strict[tc.name]
			out := run(t, &s, "", sh(tc.script)...)
			if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.path {
				t.Errorf("want sandbox_denied on %s, got %+v %s", tc.path, out.res, out.stderr)
			}
			for p, want := range before {
				if got := metaState(t, p); got != want {
					t.Fatalf("%s changed on the host:\n%s\n%s", p, want, got)
				}
			}
		})
	}
}

// TestIntegrationBrokerMetadataAllowed: the metadata calls work on
// ordinary files: chmod +x of a script, touch, cp -p, tar x keeping modes
// and times, an extended attribute, the descriptor calls on a pipe, a
// socket and an unnamed O_TMPFILE, and git's own (add, commit, gc); the
// host sees each change.
func TestIntegrationBrokerMetadataAllowed(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	ws := sb.Root
	script := `set -e
printf '#!/bin/sh\necho ran\n' > s.sh; chmod +x s.sh; ./s.sh
touch -d @1000000 old; cp -p s.sh s2.sh; touch -r old s2.sh; cp -p s2.sh s3.sh
mkdir -p src/d; echo a > src/d/a; chmod 640 src/d/a; touch -d @2000000 src/d/a; tar cf t.tar src
mkdir out; tar xf t.tar -C out
` + py(`os.setxattr("s.sh", "user.ok", b"1"); fd = os.open("old", os.O_RDONLY); os.fchmod(fd, 0o600); os.utime(fd, (3000000, 3000000)); os.fchown(fd, os.getuid(), os.getgid())
r, w = os.pipe(); os.fchmod(r, 0o600); t = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600); os.fchmod(t, 0o640); os.utime(t, (1, 1))
import socket, errno; s = socket.socket(socket.AF_UNIX); os.fchmod(s.fileno(), 0o600)
try:
    os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755); raise SystemExit("a setuid O_TMPFILE was made")
except PermissionError as e:
    assert e.errno == errno.EPERM`) + `
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q -b main r; cd r; echo x > f; chmod +x f; git add f; git commit -q -m f; git gc -q; git ls-files -s f`
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 || !strings.Contains(out.stdout, "ran") || !strings.HasPrefix(strings.TrimSpace(strings.SplitAfter(out.stdout, "ran\n")[1]), "100755") {
		t.Fatalf("metadata calls on ordinary files: %+v stdout %q stderr %s", out.res, out.stdout, out.stderr)
	}
	stat := func(p string) unix.Stat_t {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(ws, p), &st); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return st
	}
	if m := stat("s.sh").Mode; m&0o111 == 0 {
		t.Errorf("chmod +x: mode %o", m)
	}
	if s3 := stat("s3.sh"); s3.Mtim.Sec != 1000000 || s3.Mode != stat("s.sh").Mode {
		t.Errorf("cp -p: mtime %d mode %o", s3.Mtim.Sec, s3.Mode)
	}
	if a := stat("out/src/d/a"); a.Mode&0o777 != 0o640 || a.Mtim.Sec != 2000000 {
		t.Errorf("tar x: mode %o mtime %d", a.Mode, a.Mtim.Sec)
	}
	if o := stat("old"); o.Mode&0o777 != 0o600 || o.Mtim.Sec != 3000000 {
		t.Errorf("fchmod, futimens: mode %o mtime %d", o.Mode, o.Mtim.Sec)
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(filepath.Join(ws, "s.sh"), "user.ok", buf); err != nil || string(buf[:n]) != "1" {
		t.Errorf("setxattr: %q %v", buf[:n], err)
	}
}

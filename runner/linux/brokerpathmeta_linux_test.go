package linux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// pyCall runs call in Python (os, l: libc) and exits with its errno: an
// OSError's, or the C library's after a raw l.syscall that failed.
func pyCall(call string) string {
	return py("import sys\ntry:\n    r = " + call + "\n    sys.exit(ctypes.get_errno() if r else 0)\nexcept OSError as e:\n    sys.exit(e.errno)")
}

// TestIntegrationBrokerPathMetaFastPath is the security property of the
// metadata fast path by path (utimensat, utimes, utime, futimesat, chown,
// lchown, fchownat, and chmod, fchmodat, fchmodat2 with no execute, setid,
// sticky or group/other write bit stay in the kernel in the default mode):
//   - on a protect pattern's match that no mount covers, each such call
//     succeeds in the default mode, where the broker refuses it: so it was
//     not sent there (the window docs/performance.md states); with
//     strict_deny each is refused with the file's path and the file's
//     mode, owner, times and change time are unchanged;
//   - chmod +x, chmod g+w and a setuid mode by path on that match are
//     still refused in both modes, the file unchanged;
//   - on a protected file that exists at start (a read-only mount) and on
//     a denied one (masked), a by-path time, owner or mode change fails
//     with EROFS in the default mode (refused by the broker with
//     strict_deny), the file unchanged.
func TestIntegrationBrokerPathMetaFastPath(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	const (
		hookRel = "sub/.git/hooks/pre-commit"
		linkRel = "sub/.git/hooks/post-checkout" // a symlink the host made, to pre-commit
		cfgRel  = ".git/config"                  // protected, a read-only mount
		keyRel  = "key.pem"                      // denied, masked
		erofs   = 30
		eperm   = 1
	)
	amd64 := runtime.GOARCH == "amd64"
	// The access time is set ahead, so that no read moves it (relatime:
	// cordon reads the config at start).
	old, ahead := time.Unix(500, 0), time.Now().Add(time.Hour)
	rows := []struct {
		name, file, script string
		x86                bool
		// defaultOK: the call succeeds in the default mode (the kernel
		// performs it) and changed tells that it did; otherwise it is
		// refused in both modes, by the broker unless defaultErrno.
		defaultOK    bool
		changed      func(st unix.Stat_t) bool
		defaultErrno int
	}{
		{"utimensat", hookRel, pyCall(`os.utime("` + hookRel + `", (1000, 1000))`), false, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec == 1000 }, 0},
		{"utimensat-through-symlink", hookRel, pyCall(`os.utime("lnk", (2000, 2000))`), false, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec == 2000 }, 0},
		{"utimensat-now", hookRel, "touch -c -m " + hookRel, false, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec > 500 }, 0},
		{"utimensat-nofollow-symlink", linkRel, pyCall(`os.utime("` + linkRel + `", (3000, 3000), follow_symlinks=False)`), false, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec == 3000 }, 0},
		{"fchownat", hookRel, pyCall(`os.chown("` + hookRel + `", os.getuid(), os.getgid())`), false, true, nil, 0},
		{"fchownat-nofollow-symlink", linkRel, pyCall(`os.chown("` + linkRel + `", -1, os.getgid(), follow_symlinks=False)`), false, true, nil, 0},
		{"chmod-600", hookRel, "chmod 600 " + hookRel, false, true,
			func(st unix.Stat_t) bool { return st.Mode&0o7777 == 0o600 }, 0},
		{"fchmodat2-400", hookRel, pyCall(`l.syscall(452, -100, b"` + hookRel + `", 0o400, 0)`), false, true,
			func(st unix.Stat_t) bool { return st.Mode&0o7777 == 0o400 }, 0},
		// The calls glibc no longer makes, by number (x86-64): chown 92,
		// lchown 94, utime 132, utimes 235, futimesat 261.
		{"chown", hookRel, pyCall(`l.syscall(92, b"` + hookRel + `", os.getuid(), os.getgid())`), true, true, nil, 0},
		{"lchown", linkRel, pyCall(`l.syscall(94, b"` + linkRel + `", -1, os.getgid())`), true, true, nil, 0},
		{"utime", hookRel, pyCall(`l.syscall(132, b"` + hookRel + `", None)`), true, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec > 500 }, 0},
		{"utimes", hookRel, pyCall(`l.syscall(235, b"` + hookRel + `", None)`), true, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec > 500 }, 0},
		{"futimesat", hookRel, pyCall(`l.syscall(261, -100, b"` + hookRel + `", None)`), true, true,
			func(st unix.Stat_t) bool { return st.Mtim.Sec > 500 }, 0},
		{"chmod-exec", hookRel, "chmod +x " + hookRel, false, false, nil, 0},
		{"chmod-group-write", hookRel, "chmod g+w " + hookRel, false, false, nil, 0},
		{"chmod-setuid", hookRel, pyCall(`os.chmod("` + hookRel + `", 0o4600)`), false, false, nil, eperm},
		{"read-only-mount-utimensat", cfgRel, pyCall(`os.utime("` + cfgRel + `", (1, 1))`), false, false, nil, erofs},
		{"read-only-mount-utimensat-now", cfgRel, pyCall(`os.utime("` + cfgRel + `")`), false, false, nil, erofs},
		{"read-only-mount-chown", cfgRel, pyCall(`os.chown("` + cfgRel + `", os.getuid(), os.getgid())`), false, false, nil, erofs},
		{"read-only-mount-chmod", cfgRel, pyCall(`os.chmod("` + cfgRel + `", 0o600)`), false, false, nil, erofs},
		{"deny-utimensat", keyRel, pyCall(`os.utime("` + keyRel + `", (1, 1))`), false, false, nil, erofs},
		{"deny-chmod", keyRel, pyCall(`os.chmod("` + keyRel + `", 0o600)`), false, false, nil, erofs},
	}
	inBothModes(t, func(t *testing.T, sb *spec.Sandbox) {
		ws := sb.Root
		sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
		sb.Deny = []string{ws + "/**/*.pem"}
		for _, p := range []string{hookRel, cfgRel, keyRel} {
			if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("pre-commit", filepath.Join(ws, linkRel)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(hookRel, filepath.Join(ws, "lnk")); err != nil {
			t.Fatal(err)
		}
		// state is what the calls could change, with the change time,
		// which every metadata change moves (a chown to the same ids too).
		state := func(rel string) (string, unix.Stat_t) {
			p := filepath.Join(ws, rel)
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%s ctime %d.%d", metaState(t, p), st.Ctim.Sec, st.Ctim.Nsec), st
		}
		for _, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				if tc.x86 && !amd64 {
					t.Skip("x86-64 only")
				}
				for rel, body := range map[string]string{hookRel: "#!/bin/sh\ntouch /tmp/pwned\n", cfgRel: "[core]\n", keyRel: "SECRET\n"} {
					p := filepath.Join(ws, rel)
					if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Chtimes(p, ahead, old); err != nil {
						t.Fatal(err)
					}
				}
				if err := unix.Lutimes(filepath.Join(ws, linkRel), []unix.Timeval{unix.NsecToTimeval(ahead.UnixNano()), {Sec: 500}}); err != nil {
					t.Fatal(err)
				}
				before, _ := state(tc.file)
				out := run(t, sb, "", sh(tc.script)...)
				after, st := state(tc.file)
				full := filepath.Join(ws, tc.file)
				switch {
				case tc.defaultOK && !sb.StrictDeny:
					if out.res.ExitCode != 0 || out.res.FailureType != runner.FailureNone {
						t.Fatalf("want the kernel to perform it (the default mode sends it to no broker), got %+v %s", out.res, out.stderr)
					}
					if after == before || (tc.changed != nil && !tc.changed(st)) {
						t.Fatalf("%s: the call succeeded but the host file shows no change:\n%s\n%s", full, before, after)
					}
					return
				case tc.defaultErrno != 0 && !sb.StrictDeny:
					if out.res.ExitCode != tc.defaultErrno {
						t.Errorf("want errno %d from the kernel, got %+v %s", tc.defaultErrno, out.res, out.stderr)
					}
				case tc.defaultErrno == eperm:
					if out.res.ExitCode != eperm {
						t.Errorf("want EPERM from the broker, got %+v %s", out.res, out.stderr)
					}
				default:
					if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != full {
						t.Errorf("want sandbox_denied on %s, got %+v %s", full, out.res, out.stderr)
					}
				}
				if after != before {
					t.Fatalf("%s changed on the host:\n%s\n%s", full, before, after)
				}
			})
		}
	})
}

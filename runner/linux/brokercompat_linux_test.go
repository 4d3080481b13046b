//go:build amd64

package linux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// int80 is a Python snippet that makes system call nr through the i386
// ABI (int $0x80 from 64-bit code, which the kernel allows with
// IA32_EMULATION) with up to four arguments, "P" being the address of
// path; the call's errno is the exit code.
func int80(path string, nr int, args ...string) string {
	list := ""
	for _, a := range args {
		list += a + ", "
	}
	return py(`import mmap, struct, sys
m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40, prot=7)
b = (ctypes.c_char * 4096).from_buffer(m)
a = ctypes.addressof(b)
p = b"` + path + `\0"
b[512:512 + len(p)] = p
v = [(a + 512 if x == "P" else x) & 0xffffffff for x in [` + list + `]] + [0] * 4
code = b"\x53\xb8" + struct.pack("<I", ` + fmt.Sprint(nr) + `) + b"".join(o + struct.pack("<I", x) for o, x in zip([b"\xbb", b"\xb9", b"\xba", b"\xbe"], v)) + b"\xcd\x80\x5b\xc3"
b[0:len(code)] = code
r = ctypes.CFUNCTYPE(ctypes.c_int)(a)()
sys.exit(-r if r < 0 else 0)`)
}

// TestIntegrationBrokerCompatABIRefused is the security property "the
// 32-bit ABI is no way around the broker": the profile allows the i386
// calls that change a file by path under names the x86-64 table lacks
// (truncate64, chown32, lchown32, utimensat_time64; fchown32), so
// removing the brokered names from the filter left them in the kernel,
// and a command could truncate a protected file no read-only mount covers
// (a protect pattern's match) or change its owner or times. Each fails
// with ENOSYS (as every brokered call made through another ABI does), and
// the host file's content, mode, owner, times and change time are
// unchanged.
func TestIntegrationBrokerCompatABIRefused(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
	const rel = "sub/.git/hooks/pre-commit"
	hook := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	const body = "#!/bin/sh\nexec scan-for-secrets\n"
	state := func() string {
		var st unix.Stat_t
		if err := unix.Lstat(hook, &st); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(hook)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s ctime %d.%d content %q", metaState(t, hook), st.Ctim.Sec, st.Ctim.Nsec, data)
	}
	const enosys = 38
	rows := []struct {
		name   string
		nr     int
		args   []string
		strict bool
	}{
		{"truncate64", 193, []string{`"P"`, "0", "0"}, false},
		{"chown32", 212, []string{`"P"`, "os.getuid()", "os.getgid()"}, false},
		{"lchown32", 198, []string{`"P"`, "os.getuid()", "os.getgid()"}, false},
		{"utimensat_time64", 412, []string{"-100", `"P"`, "0", "0"}, false},
		{"truncate64-strict", 193, []string{`"P"`, "0", "0"}, true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(hook, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := os.ReadFile(hook); err != nil { // relatime: see FdMetaFastPath
				t.Fatal(err)
			}
			before := state()
			sb.StrictDeny = tc.strict
			out := run(t, sb, "", sh(int80(rel, tc.nr, tc.args...))...)
			if out.res.ExitCode != enosys {
				t.Errorf("want ENOSYS (%d) for i386 %s, got %+v %s", enosys, tc.name, out.res, out.stderr)
			}
			if got := state(); got != before {
				t.Fatalf("%s changed on the host:\n%s\n%s", hook, before, got)
			}
		})
	}
}

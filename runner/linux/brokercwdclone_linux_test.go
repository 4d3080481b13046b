//go:build amd64

package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// rawThreadExec is a Python snippet (x86-64 machine code, as int80's) that
// makes a thread with clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD) and no
// CLONE_FS, so that the thread keeps its own copy of the working
// directory (d1) and umask (022). The leader then moves to d2, sets umask
// 0 and creates a file (the broker reads and may keep both values for the
// leader's tid); then the thread execs sh from the non-leader thread, and
// takes over the leader's tid with its own d1 and 022: sh's relative
// create of "marker" (mode 0666) is the kernel's d1/marker, mode 0644.
const rawThreadExec = `import mmap, struct, time
os.umask(0o022)
os.mkdir("d1"); os.mkdir("d2"); os.chdir("d1")
m = mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=7)
b = (ctypes.c_char * (1 << 20)).from_buffer(m)
a = ctypes.addressof(b)
q = lambda v: struct.pack("<Q", v)
def put(off, s):
    b[off:off + len(s)] = s
    return a + off
sh = put(8192, b"/bin/sh\0"); c = put(8256, b"-c\0"); cmd = put(8320, b": > marker\0")
argv = put(12288, q(sh) + q(c) + q(cmd) + q(0)); envp = put(12352, q(0))
flag = a + 4096
child = b"\x48\xb8" + q(flag) + b"\x80\x38\x00\x74\xfb" + b"\xb8\x3b\x00\x00\x00\x48\xbf" + q(sh) + b"\x48\xbe" + q(argv) + b"\x48\xba" + q(envp) + b"\x0f\x05\xb8\x3c\x00\x00\x00\x31\xff\x0f\x05"
code = b"\xb8\x38\x00\x00\x00\x48\xbf" + q(0x50900) + b"\x48\xbe" + q(a + (1 << 20) - 64) + b"\x31\xd2\x45\x31\xd2\x45\x31\xc0\x0f\x05\x48\x85\xc0\x74\x01\xc3" + child
put(0, code)
tid = ctypes.CFUNCTYPE(ctypes.c_long)(a)()
if tid < 0:
    os._exit(3)
os.chdir("../d2")
os.umask(0)
os.close(os.open("leader", os.O_CREAT | os.O_WRONLY, 0o644))
b[4096] = b"\x01"
time.sleep(60)
os._exit(4)`

// TestIntegrationBrokerCwdRawThreadExec is the kernel-path rule on the
// broker's kept working directory and umask: a thread made without
// CLONE_FS that execs from a non-leader thread takes over its leader's
// tid with its own working directory and umask, and the broker used the
// leader's kept ones for it (its relative create landed in the leader's
// directory, with the leader's umask). The filter notifies such a clone,
// and the broker keeps nothing from then on: the create lands where the
// kernel puts it, with the thread's own umask, and nothing appears in the
// leader's directory. Default mode and strict_deny (which keeps umasks).
func TestIntegrationBrokerCwdRawThreadExec(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	inBothModes(t, func(t *testing.T, sb *spec.Sandbox) {
		out := run(t, sb, "", sh(py(rawThreadExec))...)
		if out.res.ExitCode != 0 {
			t.Fatalf("%+v %s", out.res, out.stderr)
		}
		if _, err := os.Lstat(filepath.Join(sb.Root, "d2/leader")); err != nil {
			t.Fatalf("the leader's create: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(sb.Root, "d2/marker")); err == nil {
			t.Error("d2/marker exists: the exec'd thread's relative create was resolved from its leader's kept working directory")
		}
		st, err := os.Lstat(filepath.Join(sb.Root, "d1/marker"))
		if err != nil {
			t.Fatalf("d1/marker, where the kernel creates it: %v", err)
		}
		if got := st.Mode().Perm(); got != 0o644 {
			t.Errorf("d1/marker has mode %o, want 0644: the exec'd thread's create used its leader's kept umask", got)
		}
	})
}

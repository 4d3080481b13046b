//go:build cgo && !noseccomp

package linux

import (
	"runtime"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner/linux/internal/seccomp"
	"github.com/cordon-run/cordon/spec"
)

// readOpenBudget is the most BPF instructions a read-only open may run in
// the sandbox's filter (34 at 04e1ec3, amd64): every open of a file runs
// it, since the filter reads the open's flags. libseccomp's binary tree
// keeps it near the logarithm of the number of rules; a filter rebuilt as
// a list would run hundreds.
const readOpenBudget = 64

// readPathCalls are the calls of read-heavy work (find, cat, an
// interpreter importing modules): each must be allowed whatever its
// arguments, so that the kernel lets it through with a bit test and never
// runs the filter (hack/bench.d/broker.sh, read-tree and py-import).
// Names a platform lacks (open, stat on arm64) are skipped.
var readPathCalls = []string{
	"read", "pread64", "readv", "write", "writev", "close", "fstat", "newfstatat", "stat", "lstat",
	"statx", "getdents64", "lseek", "mmap", "munmap", "mprotect", "brk", "fadvise64", "readlink",
	"readlinkat", "access", "faccessat", "faccessat2", "getcwd", "fcntl", "futex", "execve", "wait4",
	"exit_group", "rt_sigaction", "rt_sigprocmask", "pipe2", "dup2", "dup3",
}

// TestSeccompReadPathStaysInKernel pins down what the sandbox's filter
// costs read-heavy work, in the default mode and with strict_deny: the
// read path's calls are constant-allowed (the kernel's per-call bitmap,
// no BPF run), a read-only open stays in the kernel within
// readOpenBudget instructions and is never sent to the broker (strict_deny
// sends all but O_PATH, as documented), and the calls the broker must
// decide (a writable open, mkdirat, unlinkat) are still sent to it.
func TestSeccompReadPathStaysInKernel(t *testing.T) {
	arches := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}
	arch, ok := arches[runtime.GOARCH]
	if !ok {
		t.Skipf("no audit architecture for %s in this test", runtime.GOARCH)
	}
	prof, err := spec.DefaultSeccomp(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	base, err := specconv.SetupSeccomp(prof)
	if err != nil {
		t.Fatal(err)
	}
	nr := func(t *testing.T, name string) (int32, bool) {
		t.Helper()
		n, err := libseccomp.GetSyscallFromName(name)
		return int32(n), err == nil && n >= 0
	}
	const (
		rdonly  = unix.O_RDONLY | unix.O_CLOEXEC
		rddir   = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_CLOEXEC
		opath   = unix.O_PATH | unix.O_CLOEXEC
		create  = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC
		atCWD   = uint64(0xffffff9c) // AT_FDCWD as the filter sees it
		inKern  = "kernel"
		sent    = "broker"
		anyMode = ""
	)
	opens := []struct {
		name, call string
		args       [6]uint64
		want       string
		strictWant string // with strict_deny, when it differs
	}{
		{"openat-rdonly", "openat", [6]uint64{atCWD, 0, rdonly}, inKern, sent},
		{"openat-directory", "openat", [6]uint64{atCWD, 0, rddir}, inKern, sent},
		{"openat-path", "openat", [6]uint64{atCWD, 0, opath}, inKern, anyMode},
		{"open-rdonly", "open", [6]uint64{0, rdonly}, inKern, sent},
		{"openat-create", "openat", [6]uint64{atCWD, 0, create, 0o644}, sent, anyMode},
		{"open-create", "open", [6]uint64{0, create, 0o644}, sent, anyMode},
		{"mkdirat", "mkdirat", [6]uint64{atCWD, 0, 0o755}, sent, anyMode},
		{"unlinkat", "unlinkat", [6]uint64{atCWD, 0, 0}, sent, anyMode},
	}
	for _, strict := range []bool{false, true} {
		mode := "default"
		if strict {
			mode = "strict_deny"
		}
		prog, err := seccomp.Compile(brokeredSeccomp(base, strict))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(mode, func(t *testing.T) {
			for _, name := range readPathCalls {
				n, ok := nr(t, name)
				if !ok {
					continue
				}
				if c, err := seccomp.ConstAllow(prog, arch, n); err != nil || !c {
					v, _ := seccomp.Eval(prog, seccomp.Call{Nr: n, Arch: arch})
					t.Errorf("%s: the kernel runs the filter on every call (constant allow %v, %v; verdict %#x in %d instructions): a rule on it reads its arguments, or does not allow it", name, c, err, v.Action, v.Steps)
				}
			}
			for _, tc := range opens {
				n, ok := nr(t, tc.call)
				if !ok {
					continue
				}
				want := tc.want
				if strict && tc.strictWant != anyMode {
					want = tc.strictWant
				}
				v, err := seccomp.Eval(prog, seccomp.Call{Nr: n, Arch: arch, Args: tc.args})
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				switch {
				case want == sent && !v.Notified():
					t.Errorf("%s: verdict %#x, want it sent to the broker", tc.name, v.Action)
				case want == inKern && !v.Allowed():
					t.Errorf("%s: verdict %#x, want it allowed in the kernel", tc.name, v.Action)
				case want == inKern && v.Steps > readOpenBudget:
					t.Errorf("%s: %d BPF instructions per call, budget %d", tc.name, v.Steps, readOpenBudget)
				}
			}
		})
	}
}

// TestBrokeredFilterRefusesOwnListener: under the broker, a filter with a
// listener of its own is refused with EBUSY by cordon's filter itself, not
// only by the kernel while the broker's listener is open (once it closed,
// a sandbox's newer listener would be asked first); a filter without one
// is still the sandbox's to install, in both modes.
func TestBrokeredFilterRefusesOwnListener(t *testing.T) {
	arches := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}
	arch, ok := arches[runtime.GOARCH]
	if !ok {
		t.Skipf("no audit architecture for %s in this test", runtime.GOARCH)
	}
	prof, err := spec.DefaultSeccomp(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	base, err := specconv.SetupSeccomp(prof)
	if err != nil {
		t.Fatal(err)
	}
	n, err := libseccomp.GetSyscallFromName("seccomp")
	if err != nil {
		t.Fatal(err)
	}
	// A profile that allows everything by its default action, with no
	// rule for seccomp(2) (cordon-oci's container without one), too.
	open := &configs.Seccomp{DefaultAction: configs.Allow}
	for _, c := range []struct {
		profile *configs.Seccomp
		strict  bool
	}{{base, false}, {base, true}, {open, false}} {
		strict := c.strict
		prog, err := seccomp.Compile(brokeredSeccomp(c.profile, strict))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			flags uint64
			want  uint32
		}{
			{"new listener", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_RET_ERRNO | uint32(unix.EBUSY)},
			{"new listener and tsync", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH, unix.SECCOMP_RET_ERRNO | uint32(unix.EBUSY)},
			{"plain filter", 0, unix.SECCOMP_RET_ALLOW},
		} {
			v, err := seccomp.Eval(prog, seccomp.Call{Nr: int32(n), Arch: arch, Args: [6]uint64{unix.SECCOMP_SET_MODE_FILTER, tc.flags}})
			if err != nil {
				t.Fatal(err)
			}
			if v.Action != tc.want {
				t.Errorf("strict %v, %s: verdict %#x, want %#x", strict, tc.name, v.Action, tc.want)
			}
		}
	}
}

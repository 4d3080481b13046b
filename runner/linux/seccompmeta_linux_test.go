//go:build cgo && !noseccomp

package linux

import (
	"runtime"
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner/linux/internal/seccomp"
	"github.com/cordon-run/cordon/spec"
)

// TestSeccompMetaFastPath pins down which metadata calls the filter keeps
// in the kernel (metaFastPath): in the default mode the time and owner
// calls, by path and on a descriptor, and a mode change with no bit of
// metaRiskyMode, at the mode argument's own index in each call; a mode
// with an execute, setid, sticky or group/other write bit, the *xattr
// calls and every call that creates, writes or removes are still sent to
// the broker. With strict_deny every one of them is sent. Through the
// i386 ABI (int 0x80) the same calls get the same verdicts, and its names
// the native table lacks fail with ENOSYS, so no ABI is a way around the
// rules.
func TestSeccompMetaFastPath(t *testing.T) {
	type abi struct {
		audit uint32
		arch  libseccomp.ScmpArch
	}
	abis := map[string]abi{
		"amd64": {unix.AUDIT_ARCH_X86_64, libseccomp.ArchAMD64},
		"arm64": {unix.AUDIT_ARCH_AARCH64, libseccomp.ArchARM64},
		"i386":  {unix.AUDIT_ARCH_I386, libseccomp.ArchX86},
	}
	native, ok := abis[runtime.GOARCH]
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
	const (
		path    = 0x10000 // any non-NULL pointer
		times   = 0x20000
		atCWD   = uint64(0xffffff9c)
		nofol   = unix.AT_SYMLINK_NOFOLLOW
		empty   = unix.AT_EMPTY_PATH
		inKern  = "kernel"
		sent    = "broker"
		enosys  = "ENOSYS"
		i386    = true
		natives = false
	)
	rows := []struct {
		name, call string
		compat     bool // through the i386 ABI (amd64 only)
		args       [6]uint64
		want       string // in the default mode; strict_deny sends all but ENOSYS
	}{
		{"utimensat-path", "utimensat", natives, [6]uint64{atCWD, path, times, 0}, inKern},
		{"utimensat-nofollow", "utimensat", natives, [6]uint64{atCWD, path, 0, nofol}, inKern},
		{"futimens", "utimensat", natives, [6]uint64{3, 0, times, 0}, inKern},
		{"futimesat-path", "futimesat", natives, [6]uint64{atCWD, path, times}, inKern},
		{"utimes", "utimes", natives, [6]uint64{path, times}, inKern},
		{"utime", "utime", natives, [6]uint64{path, 0}, inKern},
		{"chown", "chown", natives, [6]uint64{path, 0xffffffff, 1000}, inKern},
		{"lchown", "lchown", natives, [6]uint64{path, 1000, 1000}, inKern},
		{"fchownat-nofollow", "fchownat", natives, [6]uint64{atCWD, path, 1000, 1000, nofol}, inKern},
		{"fchownat-empty-path", "fchownat", natives, [6]uint64{3, path, 1000, 1000, empty}, inKern},
		{"fchown", "fchown", natives, [6]uint64{3, 1000, 1000}, inKern},
		{"chmod-644", "chmod", natives, [6]uint64{path, 0o644}, inKern},
		{"chmod-600-high-bits", "chmod", natives, [6]uint64{path, 0xffff0000_00000000 | 0o600}, inKern},
		{"chmod-exec", "chmod", natives, [6]uint64{path, 0o755}, sent},
		{"chmod-owner-exec", "chmod", natives, [6]uint64{path, 0o700}, sent},
		{"chmod-group-write", "chmod", natives, [6]uint64{path, 0o664}, sent},
		{"chmod-other-write", "chmod", natives, [6]uint64{path, 0o646}, sent},
		{"chmod-setuid", "chmod", natives, [6]uint64{path, 0o4644}, sent},
		{"chmod-setgid", "chmod", natives, [6]uint64{path, 0o2644}, sent},
		{"chmod-sticky", "chmod", natives, [6]uint64{path, 0o1644}, sent},
		{"fchmodat-600", "fchmodat", natives, [6]uint64{atCWD, path, 0o600}, inKern},
		// fchmodat's mode is its third argument: a rule that read the
		// second (the path pointer, here with no risky bit) would let it by.
		{"fchmodat-exec", "fchmodat", natives, [6]uint64{atCWD, 0x10000, 0o755}, sent},
		{"fchmodat2-444-nofollow", "fchmodat2", natives, [6]uint64{atCWD, path, 0o444, nofol}, inKern},
		{"fchmodat2-exec", "fchmodat2", natives, [6]uint64{atCWD, path, 0o711, empty}, sent},
		{"fchmod-644", "fchmod", natives, [6]uint64{3, 0o644}, inKern},
		{"fchmod-exec", "fchmod", natives, [6]uint64{3, 0o755}, sent},
		{"setxattr", "setxattr", natives, [6]uint64{path, path, path, 1}, sent},
		{"lsetxattr", "lsetxattr", natives, [6]uint64{path, path, path, 1}, sent},
		{"fsetxattr", "fsetxattr", natives, [6]uint64{3, path, path, 1}, sent},
		{"removexattr", "removexattr", natives, [6]uint64{path, path}, sent},
		{"truncate", "truncate", natives, [6]uint64{path, 0}, sent},
		{"unlinkat", "unlinkat", natives, [6]uint64{atCWD, path, 0}, sent},
		{"i386-utimensat-path", "utimensat", i386, [6]uint64{atCWD, path, times, 0}, inKern},
		{"i386-chown16", "chown", i386, [6]uint64{path, 0xffff, 0}, inKern},
		{"i386-fchownat", "fchownat", i386, [6]uint64{atCWD, path, 0, 0, nofol}, inKern},
		{"i386-chmod-644", "chmod", i386, [6]uint64{path, 0o644}, inKern},
		{"i386-chmod-exec", "chmod", i386, [6]uint64{path, 0o755}, sent},
		{"i386-fchmodat-exec", "fchmodat", i386, [6]uint64{atCWD, path, 0o700}, sent},
		{"i386-fchmodat2-setuid", "fchmodat2", i386, [6]uint64{atCWD, path, 0o4644, 0}, sent},
		{"i386-fchmod-group-write", "fchmod", i386, [6]uint64{3, 0o620}, sent},
		{"i386-chown32", "chown32", i386, [6]uint64{path, 0, 0}, enosys},
		{"i386-lchown32", "lchown32", i386, [6]uint64{path, 0, 0}, enosys},
		{"i386-fchown32", "fchown32", i386, [6]uint64{3, 0, 0}, enosys},
		{"i386-utimensat_time64", "utimensat_time64", i386, [6]uint64{atCWD, path, times, 0}, enosys},
		{"i386-truncate64", "truncate64", i386, [6]uint64{path, 0, 0}, enosys},
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
			seen := 0
			for _, tc := range rows {
				a := native
				if tc.compat {
					if runtime.GOARCH != "amd64" {
						continue
					}
					a = abis["i386"]
				}
				nr, err := libseccomp.GetSyscallFromNameByArch(tc.call, a.arch)
				if err != nil || nr < 0 {
					continue // a call this architecture lacks (chmod on arm64)
				}
				args := tc.args
				if tc.compat {
					for i := range args {
						args[i] &= 0xffffffff // a 32-bit ABI passes 32-bit registers
					}
				}
				seen++
				v, err := seccomp.Eval(prog, seccomp.Call{Nr: int32(nr), Arch: a.audit, Args: args})
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				want := tc.want
				if strict && want == inKern {
					want = sent
				}
				switch {
				case want == sent && !v.Notified():
					t.Errorf("%s: verdict %#x, want it sent to the broker", tc.name, v.Action)
				case want == inKern && !v.Allowed():
					t.Errorf("%s: verdict %#x, want it left in the kernel", tc.name, v.Action)
				case want == enosys && v.Action != unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS):
					t.Errorf("%s: verdict %#x, want ENOSYS", tc.name, v.Action)
				}
			}
			if runtime.GOARCH == "amd64" && seen != len(rows) {
				t.Errorf("libseccomp names %d of the %d calls: each must be checked on amd64", seen, len(rows))
			}
		})
	}
}

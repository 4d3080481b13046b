package spec

import (
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cordon's own narrowing of Docker's profile (issue 9, item 5): no
// sandboxed command may leave a setuid or setgid file on the host. nosuid
// on the sandbox's mounts protects only the sandbox; the host mounts the
// same files without it, so a setuid-root copy of /usr/bin/id made by a root
// run (or a setuid-to-the-caller one, rootless) would be an escape. The
// filter therefore refuses, with EPERM, every call that sets S_ISUID or
// S_ISGID through its mode argument:
//
//   - chmod, fchmod, fchmodat, fchmodat2;
//   - mkdir, mkdirat, mknod, mknodat;
//   - open, openat and creat when they may create a file (O_CREAT or
//     O_TMPFILE), the only case where the kernel reads the mode.
//
// openat2 carries its mode in a struct open_how that seccomp cannot read,
// so it fails with ENOSYS: every libc and runtime that uses it (none does by
// default for plain open) falls back to openat, where the mode is checked.
// Copies that preserve modes (cp -p, tar, rsync) go through the same calls.
// Setting file capabilities (security.capability) needs CAP_SETFCAP, which
// the command never has.

// seccompSetidBits is S_ISUID|S_ISGID.
const seccompSetidBits = 0o6000

// seccompCreateFlags is O_CREAT|__O_TMPFILE: without them open ignores its
// mode. (O_TMPFILE is __O_TMPFILE|O_DIRECTORY; the __O_TMPFILE bit alone
// says the mode is read.)
const seccompCreateFlags = 0o100 | 0o20000000

// seccompModeArg maps each mode-taking call to the index of its mode
// argument, and, for the open family, of its flags.
var seccompModeArg = []struct {
	name        string
	mode, flags uint
	hasFlags    bool
}{
	{name: "chmod", mode: 1},
	{name: "fchmod", mode: 1},
	{name: "fchmodat", mode: 2},
	{name: "fchmodat2", mode: 2},
	{name: "mkdir", mode: 1},
	{name: "mkdirat", mode: 2},
	{name: "mknod", mode: 1},
	{name: "mknodat", mode: 2},
	{name: "creat", mode: 1},
	{name: "open", mode: 2, flags: 1, hasFlags: true},
	{name: "openat", mode: 3, flags: 2, hasFlags: true},
}

// withoutModeCalls returns names without the calls seccompModeRules
// decides, without openat2, and without ioctl (seccompIoctlRules).
func withoutModeCalls(names []string) []string {
	return slices.DeleteFunc(names, func(n string) bool {
		if n == "openat2" || n == "ioctl" {
			return true
		}
		for _, m := range seccompModeArg {
			if m.name == n {
				return true
			}
		}
		return false
	})
}

// seccompModeRules allows each mode-taking call only when its mode has
// neither S_ISUID nor S_ISGID (or, for the open family, when it creates
// nothing), and makes openat2 fail with ENOSYS. Everything else falls to the
// profile's default action, EPERM.
func seccompModeRules() []specs.LinuxSyscall {
	var out []specs.LinuxSyscall
	for _, m := range seccompModeArg {
		out = append(out, specs.LinuxSyscall{Names: []string{m.name}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: m.mode, Value: seccompSetidBits, ValueTwo: 0, Op: specs.OpMaskedEqual}}})
		if m.hasFlags {
			out = append(out, specs.LinuxSyscall{Names: []string{m.name}, Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{Index: m.flags, Value: seccompCreateFlags, ValueTwo: 0, Op: specs.OpMaskedEqual}}})
		}
	}
	enosys := uint(errnoENOSYS)
	return append(out, specs.LinuxSyscall{Names: []string{"openat2"}, Action: specs.ActErrno, ErrnoRet: &enosys})
}

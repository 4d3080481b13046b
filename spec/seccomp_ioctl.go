package spec

import specs "github.com/opencontainers/runtime-spec/specs-go"

// cordon's narrowing of ioctl (issue 21): FS_IOC_SETFLAGS can set the
// case-folding flag (FS_CASEFOLD_FL) on an empty directory of a file
// system made with casefold support; names in it then match whatever their
// case, and ".GIT/HOOKS/pre-commit" or ".ENV" would defeat every deny and
// protect rule, which compare names byte for byte. seccomp cannot read the
// flag word the call's pointer argument names, so the filter refuses the
// call itself, with EPERM, in both its forms (FS_IOC_SETFLAGS and
// FS_IOC32_SETFLAGS, which a 32-bit process's FS_IOC_SETFLAGS also is):
// chattr cannot change any flag in the sandbox. Reading the flags
// (FS_IOC_GETFLAGS, lsattr) and every other ioctl stay allowed.
//
// The kernel reads ioctl's command as a 32-bit value, so the comparison
// looks at its low 32 bits only (an upper half set by the caller would
// not make it another command). seccomp has no masked "not equal", so the
// allowed set, every 32-bit value but the two, is written as rules
// ORed together: one per bit in which a value differs from both, and one
// for the two bits in which they differ from each other.

const (
	fsIocSetflags   = 0x40086602 // _IOW('f', 2, long)
	fsIoc32Setflags = 0x40046602 // _IOW('f', 2, int)
)

// seccompIoctlRules allows ioctl unless its command is FS_IOC_SETFLAGS or
// FS_IOC32_SETFLAGS; those fall to the profile's default action, EPERM.
func seccompIoctlRules() []specs.LinuxSyscall {
	const differ = fsIocSetflags ^ fsIoc32Setflags // 0x000c0000
	allow := func(mask, value uint64) specs.LinuxSyscall {
		// SCMP_CMP_MASKED_EQ compares (arg & Value) with ValueTwo.
		return specs.LinuxSyscall{Names: []string{"ioctl"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: mask, ValueTwo: value, Op: specs.OpMaskedEqual}}}
	}
	var out []specs.LinuxSyscall
	for b := 0; b < 32; b++ {
		bit := uint64(1) << b
		if bit&differ != 0 {
			continue
		}
		out = append(out, allow(bit, ^uint64(fsIocSetflags)&bit))
	}
	return append(out, allow(differ, 0), allow(differ, differ))
}

package spec

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// This file holds Docker's default seccomp profile as Go data, translated
// once by hand on 2026-11-22 from moby/profiles seccomp/default.json at
// commit 02e898b137ae (Apache-2.0; the same profile moby ships as
// profiles/seccomp/default.json). The profile's conditions were resolved for
// cordon's process, which always runs with an empty capability set on a
// kernel newer than 4.8 (runc 1.5 needs far newer):
//
//   - Every rule gated by "includes.caps" was dropped: open_by_handle_at
//     (CAP_DAC_READ_SEARCH); bpf, clone, clone3, fanotify_init, the new mount
//     API, lsm_*, lookup_dcookie, mount, perf_event_open, quotactl*,
//     set{domain,host}name, setns, syslog, umount*, unshare (CAP_SYS_ADMIN);
//     reboot, chroot, module loading, acct, kcmp, pidfd_getfd,
//     process_madvise, iopl, ioperm, clock setting, vhangup, mempolicy calls,
//     and the CAP_BPF/CAP_PERFMON variants.
//   - Rules with "excludes.caps: CAP_SYS_ADMIN" were kept: clone without any
//     namespace flag, and clone3 failing with ENOSYS so libc falls back to
//     clone, where the flags can be checked.
//   - "includes.minKernel: 4.8" (ptrace, process_vm_readv/writev) was kept.
//   - "includes.arches" rules are kept per architecture in seccompArches;
//     the s390, ppc64le and riscv64 variants are not carried.
//
// io_uring is absent on purpose: the profile no longer allows it.

// seccompAllowed is the profile's unconditional allow list, in its order.
var seccompAllowed = []string{
	"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat",
	"capget", "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime",
	"clock_adjtime64", "clock_getres", "clock_getres_time64", "clock_gettime",
	"clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close",
	"close_range", "connect", "copy_file_range", "creat", "dup", "dup2", "dup3",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
	"epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve",
	"execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64",
	"fadvise64_64", "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat",
	"fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync",
	"fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat",
	"fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate",
	"ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait",
	"futex_waitv", "futex_wake", "futimesat", "getcpu", "getcwd", "getdents",
	"getdents64", "getegid", "getegid32", "geteuid", "geteuid32", "getgid",
	"getgid32", "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
	"getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid",
	"getresgid32", "getresuid", "getresuid32", "getrlimit", "get_robust_list",
	"getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid",
	"gettimeofday", "getuid", "getuid32", "getxattr", "getxattrat",
	"inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
	"io_cancel", "ioctl", "io_destroy", "io_getevents", "io_pgetevents",
	"io_pgetevents_time64", "ioprio_get", "ioprio_set", "io_setup", "io_submit",
	"ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
	"landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat",
	"listen", "listmount", "listxattr", "listxattrat", "llistxattr", "_llseek",
	"lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise",
	"map_shadow_stack", "membarrier", "memfd_create", "memfd_secret", "mincore",
	"mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap",
	"mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink",
	"mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
	"munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat",
	"_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
	"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect",
	"poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv", "preadv2",
	"prlimit64", "process_mrelease", "pselect6", "pselect6_time64", "pwrite64",
	"pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
	"recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
	"removexattr", "removexattrat", "rename", "renameat", "renameat2",
	"restart_syscall", "riscv_hwprobe", "rmdir", "rseq", "rt_sigaction",
	"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
	"rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
	"rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr", "sched_getparam",
	"sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
	"sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
	"sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield",
	"seccomp", "select", "semctl", "semget", "semop", "semtimedop",
	"semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg", "sendmsg",
	"sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid",
	"setgid32", "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority",
	"setregid", "setregid32", "setresgid", "setresgid32", "setresuid",
	"setresuid32", "setreuid", "setreuid32", "setrlimit", "set_robust_list",
	"setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid",
	"setuid32", "setxattr", "setxattrat", "shmat", "shmctl", "shmdt", "shmget",
	"shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn",
	"socketcall", "socketpair", "splice", "stat", "stat64", "statfs", "statfs64",
	"statmount", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
	"syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
	"timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime",
	"timer_settime64", "timerfd_create", "timerfd_gettime", "timerfd_gettime64",
	"timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
	"truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "uretprobe",
	"utime", "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4",
	"waitid", "waitpid", "write", "writev",
}

// seccompPtrace is allowed on kernels from 4.8 on, where seccomp can no
// longer be bypassed through ptrace.
var seccompPtrace = []string{"process_vm_readv", "process_vm_writev", "ptrace"}

// seccompSocketBelow and seccompSocketFamilies are the address families
// socket(2) may ask for: every family below 12, and these ones. AF_VSOCK
// (40) and AF_ALG (38), among others, are refused.
const seccompSocketBelow = 12

var seccompSocketFamilies = []uint64{
	13, 14, 15, 16, 17, 18, 21, 22, 24, 26, 27, 28, 29, 30, 31, 32, 33, 35, 36, 39,
	41, 42, 43, 44, 45,
}

// seccompPersonalities are the personality(2) arguments allowed: PER_LINUX,
// PER_LINUX32, UNAME26, UNAME26|PER_LINUX32 and the 0xffffffff query.
var seccompPersonalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// seccompCloneNamespaceFlags is CLONE_NEWNS|CLONE_NEWCGROUP|CLONE_NEWUTS|
// CLONE_NEWIPC|CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET: clone may create no
// namespace.
const seccompCloneNamespaceFlags = 0x7E020000

// errnoEPERM and errnoENOSYS are the errno values the profile returns.
const (
	errnoEPERM  = 1
	errnoENOSYS = 38
)

// seccompArch is the per-architecture part of the profile.
type seccompArch struct {
	// arches is the native architecture first, then the compat ones.
	arches []specs.Arch
	// extra lists the syscalls the profile allows only on this
	// architecture.
	extra []string
}

// seccompArches maps GOARCH to its part of the profile.
var seccompArches = map[string]seccompArch{
	"amd64": {
		arches: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
		extra:  []string{"arch_prctl", "modify_ldt"},
	},
	"arm64": {
		arches: []specs.Arch{specs.ArchAARCH64, specs.ArchARM},
		extra: []string{
			"arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2",
			"breakpoint", "cacheflush", "set_tls",
		},
	},
}

// SeccompArchitectures returns the GOARCH values DefaultSeccomp supports,
// sorted.
func SeccompArchitectures() []string {
	var out []string
	for a := range seccompArches {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// DefaultSeccomp returns Docker's default seccomp profile for goarch
// ("amd64" or "arm64"), resolved for a process with no capabilities, and
// narrowed so that no call can set S_ISUID or S_ISGID (seccomp_modes.go):
// every syscall not listed fails with EPERM. The result is a fresh value the
// caller may change. An architecture with no profile data is an error
// wrapping ErrUnenforceable: running without the filter would be wider.
func DefaultSeccomp(goarch string) (*specs.LinuxSeccomp, error) {
	arch, ok := seccompArches[goarch]
	if !ok {
		return nil, fmt.Errorf("seccomp: no default profile for architecture %q (have %v): %w",
			goarch, SeccompArchitectures(), ErrUnenforceable)
	}
	eperm, enosys := uint(errnoEPERM), uint(errnoENOSYS)
	allow := specs.ActAllow
	s := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Architectures:   slices.Clone(arch.arches),
	}
	s.Syscalls = append(s.Syscalls,
		specs.LinuxSyscall{Names: withoutModeCalls(slices.Clone(seccompAllowed)), Action: allow},
		specs.LinuxSyscall{Names: slices.Clone(seccompPtrace), Action: allow},
		specs.LinuxSyscall{Names: []string{"socket"}, Action: allow, Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: seccompSocketBelow, Op: specs.OpLessThan},
		}},
	)
	for _, family := range seccompSocketFamilies {
		s.Syscalls = append(s.Syscalls, specs.LinuxSyscall{Names: []string{"socket"}, Action: allow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: family, Op: specs.OpEqualTo}}})
	}
	for _, p := range seccompPersonalities {
		s.Syscalls = append(s.Syscalls, specs.LinuxSyscall{Names: []string{"personality"}, Action: allow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: p, Op: specs.OpEqualTo}}})
	}
	s.Syscalls = append(s.Syscalls,
		specs.LinuxSyscall{Names: slices.Clone(arch.extra), Action: allow},
		// SCMP_CMP_MASKED_EQ compares (arg & Value) with ValueTwo.
		specs.LinuxSyscall{Names: []string{"clone"}, Action: allow, Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: seccompCloneNamespaceFlags, ValueTwo: 0, Op: specs.OpMaskedEqual},
		}},
		specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	)
	// cordon's narrowing: no setuid or setgid file (seccomp_modes.go).
	s.Syscalls = append(s.Syscalls, seccompModeRules()...)
	// No case-folding directory (seccomp_ioctl.go).
	s.Syscalls = append(s.Syscalls, seccompIoctlRules()...)
	return s, nil
}

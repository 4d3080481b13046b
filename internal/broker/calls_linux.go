package broker

import (
	"sort"

	"golang.org/x/sys/unix"
)

// commonCalls are the brokered calls every architecture has.
var commonCalls = map[int32]sysc{
	unix.SYS_OPENAT: {"openat", func(b *Broker, c *call, a [6]uint64) result {
		return b.open(c, "openat", dirfdArg(a[0]), a[1], int(int32(a[2])), uint32(a[3]))
	}},
	unix.SYS_MKDIRAT: {"mkdirat", func(b *Broker, c *call, a [6]uint64) result {
		return b.mkdir(c, "mkdirat", dirfdArg(a[0]), a[1], uint32(a[2]))
	}},
	unix.SYS_MKNODAT: {"mknodat", func(b *Broker, c *call, a [6]uint64) result {
		return b.mknod(c, "mknodat", dirfdArg(a[0]), a[1], uint32(a[2]), a[3])
	}},
	unix.SYS_UNLINKAT: {"unlinkat", func(b *Broker, c *call, a [6]uint64) result {
		return b.unlink(c, "unlinkat", dirfdArg(a[0]), a[1], int(int32(a[2])))
	}},
	unix.SYS_RENAMEAT2: {"renameat2", func(b *Broker, c *call, a [6]uint64) result {
		return b.rename(c, "renameat2", a, 0, 2, uint(uint32(a[4])))
	}},
	unix.SYS_LINKAT: {"linkat", func(b *Broker, c *call, a [6]uint64) result {
		return b.link(c, "linkat", a, int(int32(a[4])))
	}},
	unix.SYS_SYMLINKAT: {"symlinkat", func(b *Broker, c *call, a [6]uint64) result {
		return b.symlink(c, "symlinkat", a[0], dirfdArg(a[1]), a[2])
	}},
	unix.SYS_FCHMODAT: {"fchmodat", func(b *Broker, c *call, a [6]uint64) result {
		return b.chmod(c, "fchmodat", dirfdArg(a[0]), a[1], uint32(a[2]), 0)
	}},
	sysFchmodat2: {"fchmodat2", func(b *Broker, c *call, a [6]uint64) result {
		return b.chmod(c, "fchmodat2", dirfdArg(a[0]), a[1], uint32(a[2]), int(int32(a[3])))
	}},
	unix.SYS_FCHMOD: {"fchmod", func(b *Broker, c *call, a [6]uint64) result {
		return b.fchmod(c, "fchmod", int32(a[0]), uint32(a[1]))
	}},
	unix.SYS_FCHOWN: {"fchown", func(b *Broker, c *call, a [6]uint64) result {
		return b.fchown(c, "fchown", int32(a[0]), uint32(a[1]), uint32(a[2]))
	}},
	unix.SYS_FCHOWNAT: {"fchownat", func(b *Broker, c *call, a [6]uint64) result {
		return b.chown(c, "fchownat", dirfdArg(a[0]), a[1], uint32(a[2]), uint32(a[3]), int(int32(a[4])))
	}},
	unix.SYS_UTIMENSAT: {"utimensat", func(b *Broker, c *call, a [6]uint64) result {
		return b.utimes(c, "utimensat", dirfdArg(a[0]), a[1], a[2], timespecs, int(int32(a[3])))
	}},
	unix.SYS_SETXATTR: {"setxattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "setxattr", xattrCall{set: true, pathAddr: a[0], nameAddr: a[1], valAdr: a[2], size: a[3], flags: int(int32(a[4]))})
	}},
	unix.SYS_LSETXATTR: {"lsetxattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "lsetxattr", xattrCall{set: true, nofollow: true, pathAddr: a[0], nameAddr: a[1], valAdr: a[2], size: a[3], flags: int(int32(a[4]))})
	}},
	unix.SYS_FSETXATTR: {"fsetxattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "fsetxattr", xattrCall{set: true, byFD: true, fd: int32(a[0]), nameAddr: a[1], valAdr: a[2], size: a[3], flags: int(int32(a[4]))})
	}},
	unix.SYS_REMOVEXATTR: {"removexattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "removexattr", xattrCall{pathAddr: a[0], nameAddr: a[1]})
	}},
	unix.SYS_LREMOVEXATTR: {"lremovexattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "lremovexattr", xattrCall{nofollow: true, pathAddr: a[0], nameAddr: a[1]})
	}},
	unix.SYS_FREMOVEXATTR: {"fremovexattr", func(b *Broker, c *call, a [6]uint64) result {
		return b.xattr(c, "fremovexattr", xattrCall{byFD: true, fd: int32(a[0]), nameAddr: a[1]})
	}},
	unix.SYS_BIND: {"bind", func(b *Broker, c *call, a [6]uint64) result {
		return b.bind(c, "bind", int32(a[0]), a[1], int32(a[2]))
	}},
	unix.SYS_UMASK: {"umask", func(b *Broker, c *call, _ [6]uint64) result {
		// Only watched (see umasks): it names no path and has no pointer
		// to re-read, so it continues in the kernel.
		b.umasks.changing(c.pid)
		return result{fd: -1, cont: true}
	}},
	unix.SYS_TRUNCATE: {"truncate", func(b *Broker, c *call, a [6]uint64) result {
		return b.truncate(c, "truncate", a[0], int64(a[1]))
	}},
}

// sysFchmodat2 is fchmodat2's number, the same on amd64 and arm64.
const sysFchmodat2 = 452

// calls maps this architecture's syscall numbers to their brokers.
var calls = func() map[int32]sysc {
	m := map[int32]sysc{}
	for nr, s := range commonCalls {
		m[nr] = s
	}
	for nr, s := range archCalls {
		m[nr] = s
	}
	return m
}()

// Syscalls are the names of the calls the broker performs: the seccomp
// filter must notify exactly these (open and openat only when they may
// write; the runner leaves fchown, futimens and an fchmod that adds no
// execute, setid or group/other write bit in the kernel outside
// strict_deny), and umask, which it only watches.
func Syscalls() []string {
	var out []string
	for _, s := range calls {
		out = append(out, s.name)
	}
	// Sorted: the filter built from this list is cached by its content, and
	// a map's order would make every run's filter new (compiled again, and
	// one more file in the cache).
	sort.Strings(out)
	return out
}

// atCWD is AT_FDCWD as a syscall argument.
const atCWD = uint64(0xffffff9c)

package broker

import "golang.org/x/sys/unix"

// nativeArch is AUDIT_ARCH_X86_64: a call made through another ABI (i386,
// x32) has other numbers and is refused.
const nativeArch = 0xc000003e

var archCalls = map[int32]sysc{
	unix.SYS_OPEN: {"open", func(b *Broker, c *call, a [6]uint64) result {
		return b.open(c, "open", unix.AT_FDCWD, a[0], int(int32(a[1])), uint32(a[2]))
	}},
	unix.SYS_CREAT: {"creat", func(b *Broker, c *call, a [6]uint64) result {
		return b.open(c, "creat", unix.AT_FDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(a[1]))
	}},
	unix.SYS_MKDIR: {"mkdir", func(b *Broker, c *call, a [6]uint64) result {
		return b.mkdir(c, "mkdir", unix.AT_FDCWD, a[0], uint32(a[1]))
	}},
	unix.SYS_MKNOD: {"mknod", func(b *Broker, c *call, a [6]uint64) result {
		return b.mknod(c, "mknod", unix.AT_FDCWD, a[0], uint32(a[1]), a[2])
	}},
	unix.SYS_UNLINK: {"unlink", func(b *Broker, c *call, a [6]uint64) result {
		return b.unlink(c, "unlink", unix.AT_FDCWD, a[0], 0)
	}},
	unix.SYS_RMDIR: {"rmdir", func(b *Broker, c *call, a [6]uint64) result {
		return b.unlink(c, "rmdir", unix.AT_FDCWD, a[0], unix.AT_REMOVEDIR)
	}},
	unix.SYS_RENAME: {"rename", func(b *Broker, c *call, a [6]uint64) result {
		return b.rename(c, "rename", [6]uint64{atCWD, a[0], atCWD, a[1]}, 0, 2, 0)
	}},
	unix.SYS_RENAMEAT: {"renameat", func(b *Broker, c *call, a [6]uint64) result {
		return b.rename(c, "renameat", a, 0, 2, 0)
	}},
	unix.SYS_LINK: {"link", func(b *Broker, c *call, a [6]uint64) result {
		return b.link(c, "link", [6]uint64{atCWD, a[0], atCWD, a[1]}, 0)
	}},
	unix.SYS_SYMLINK: {"symlink", func(b *Broker, c *call, a [6]uint64) result {
		return b.symlink(c, "symlink", a[0], unix.AT_FDCWD, a[1])
	}},
	unix.SYS_CHMOD: {"chmod", func(b *Broker, c *call, a [6]uint64) result {
		return b.chmod(c, "chmod", unix.AT_FDCWD, a[0], uint32(a[1]), 0)
	}},
	unix.SYS_CHOWN: {"chown", func(b *Broker, c *call, a [6]uint64) result {
		return b.chown(c, "chown", unix.AT_FDCWD, a[0], uint32(a[1]), uint32(a[2]), 0)
	}},
	unix.SYS_LCHOWN: {"lchown", func(b *Broker, c *call, a [6]uint64) result {
		return b.chown(c, "lchown", unix.AT_FDCWD, a[0], uint32(a[1]), uint32(a[2]), unix.AT_SYMLINK_NOFOLLOW)
	}},
	unix.SYS_UTIMES: {"utimes", func(b *Broker, c *call, a [6]uint64) result {
		return b.utimes(c, "utimes", unix.AT_FDCWD, a[0], a[1], timevals, 0)
	}},
	unix.SYS_FUTIMESAT: {"futimesat", func(b *Broker, c *call, a [6]uint64) result {
		return b.utimes(c, "futimesat", dirfdArg(a[0]), a[1], a[2], timevals, 0)
	}},
	unix.SYS_UTIME: {"utime", func(b *Broker, c *call, a [6]uint64) result {
		return b.utimes(c, "utime", unix.AT_FDCWD, a[0], a[1], utimbuf, 0)
	}},
}

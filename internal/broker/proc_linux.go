package broker

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The broker opens what it opens with more than the caller's rights over
// other processes: rootless, its uid owns the sandbox's user namespace,
// so the kernel grants it ptrace access to every process in there (the
// non-dumpable init and session shims included), whatever capabilities it
// drops; as root it keeps CAP_SYS_PTRACE permitted. An open of another
// process's /proc entry that the kernel gates on ptrace access would then
// give the caller a descriptor it could never get itself (/proc/1/mem
// opened for writing: cordon's own init, rewritable). So a brokered open
// under /proc/N, for N not the caller's own process, is refused when it
// writes (nothing there is the caller's to change), and a read (with
// strict_deny) when the entry is one of those gated on ptrace access.

// procRule is the refusal of such an open.
const procRule = "another process's /proc entry (the broker would open it with more than the caller's rights)"

// ptraceGated are the entries of /proc/N (and /proc/N/task/T) whose open
// the kernel allows only to a process with ptrace access to N.
var ptraceGated = map[string]bool{
	"mem": true, "environ": true, "auxv": true, "pagemap": true, "maps": true,
	"smaps": true, "smaps_rollup": true, "numa_maps": true, "syscall": true,
	"stack": true, "io": true, "personality": true, "wchan": true,
	"timerslack_ns": true, "fd": true, "fdinfo": true, "map_files": true,
	"ns": true, "cwd": true, "root": true, "exe": true,
}

// procOther reports whether the sandbox path p lies under /proc/N for a
// process N other than the caller's (an unknown caller counts as other),
// and the entry of /proc/N (or /proc/N/task/T) it is in.
func (c *call) procOther(p string) (entry string, other bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	n, after, _ := strings.Cut(rest, "/")
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return "", false // /proc/sys, /proc/meminfo, ...: not a process's
	}
	if tgid, _, ok := c.nsIDs(); ok && n == tgid {
		return "", false
	}
	parts := strings.Split(after, "/")
	if len(parts) >= 3 && parts[0] == "task" {
		parts = parts[2:]
	}
	return parts[0], true
}

// procAllowed refuses (and records) an open of p that procRule forbids.
func (b *Broker) procAllowed(c *call, op, p string, read bool) bool {
	entry, other := c.procOther(p)
	if !other || read && !ptraceGated[entry] {
		return true
	}
	b.deny(op, p, procRule)
	return false
}

// reopenCallerFD opens the file behind the caller's descriptor fd again,
// with flags, as the kernel does for /proc/self/fd/N.
func (b *Broker) reopenCallerFD(c *call, op string, fd, flags int) result {
	link := "/proc/" + strconv.Itoa(c.pid) + "/fd/" + strconv.Itoa(fd)
	c.mayBlock() // the descriptor may be a FIFO's
	read := flags&writeFlags == 0
	if p, err := linkPath(link); err == nil && !b.checkMode(op, p, read) {
		return fail(unix.EACCES)
	}
	nfd, err := unix.Open(link, (flags|unix.O_CLOEXEC)&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW), 0)
	if err != nil {
		return fail(err)
	}
	if err := c.live(); err != nil {
		unix.Close(nfd)
		return fail(err)
	}
	if p, err := fdPath(nfd); err == nil && (!b.checkMode(op, p, read) || !read && !b.bareWriteOK(c, op, p)) {
		unix.Close(nfd)
		return fail(unix.EACCES)
	}
	return result{fd: nfd, cloexec: flags&unix.O_CLOEXEC != 0}
}

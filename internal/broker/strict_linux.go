package broker

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// With strict_deny the filter sends every open to the broker, reads
// included, and the broker performs it as it performs a write-open. Two
// paths mean the opener itself and need care when the broker opens them:
// /proc/self and /proc/thread-self (the broker is not in the sandbox's pid
// namespace: they would name nothing, or the broker), and what lies under
// /proc at all (the broker keeps CAP_SYS_PTRACE to read its callers; a
// /proc file opened with it would give the caller more than its own open).

// checkMode is check for a write and, for a read, refuses only what a deny
// rule forbids.
func (b *Broker) checkMode(op, p string, read bool) bool {
	if !read {
		return b.check(op, p)
	}
	rp, ok := b.policy.(ReadPolicy)
	if !ok {
		return b.check(op, p)
	}
	if rule := rp.RefuseRead(p); rule != "" {
		b.deny(op, p, rule)
		return false
	}
	return true
}

// procSelf rewrites a path under /proc/self or /proc/thread-self to the
// caller's own pid (and thread) as the sandbox numbers them, and one
// through /proc/PID/root or /proc/PID/cwd (links the broker does not
// follow in a path) to the path they lead to.
func (c *call) procSelf(full string) string {
	if !strings.Contains(full, "/proc/") {
		return full
	}
	p := cleanAbs(full)
	var rest string
	thread := false
	switch {
	case p == "/proc/self" || strings.HasPrefix(p, "/proc/self/"):
		rest = p[len("/proc/self"):]
	case p == "/proc/thread-self" || strings.HasPrefix(p, "/proc/thread-self/"):
		rest, thread = p[len("/proc/thread-self"):], true
	default:
		if r, ok := c.procLinks(p); ok {
			return r
		}
		return full
	}
	tgid, tid, ok := c.nsIDs()
	if !ok {
		return full // the broker's own view: it names nothing of the caller
	}
	p = "/proc/" + tgid + rest
	if thread {
		p = "/proc/" + tgid + "/task/" + tid + rest
	}
	if r, ok := c.procLinks(p); ok {
		return r
	}
	return p
}

// procLinks rewrites /proc/N[/task/T]/root/REST to /REST (every process of
// the sandbox has its root: none can chroot) and /proc/N[/task/T]/cwd/REST
// to that process's working directory and REST; it reports false for
// anything else.
func (c *call) procLinks(p string) (string, bool) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/proc/"), "/", 5)
	i := 1
	if len(parts) > 3 && parts[1] == "task" {
		i = 3
	}
	if len(parts) <= i || (parts[i] != "root" && parts[i] != "cwd") {
		return "", false
	}
	for _, n := range parts[:i] {
		if n != "task" && strings.Trim(n, "0123456789") != "" {
			return "", false
		}
	}
	rest := ""
	if len(parts) > i+1 {
		rest = "/" + strings.Join(parts[i+1:], "/")
	}
	if parts[i] == "root" {
		return "/" + strings.TrimPrefix(rest, "/"), true
	}
	root, err := c.rootFD()
	if err != nil {
		return "", false
	}
	fd, err := unix.Openat2(root, "/proc/"+strings.Join(parts[:i], "/"), &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	cwd, err := readlinkat(fd, "cwd")
	if err != nil || !strings.HasPrefix(cwd, "/") {
		return "", false
	}
	return strings.TrimSuffix(cwd, "/") + rest, true
}

// dotName reports whether the last component of full is ".", ".." or
// none (the root): a directory, never a symlink, which the broker opens
// whole.
func dotName(full string) bool {
	t := strings.TrimRight(full, "/")
	i := strings.LastIndexByte(t, '/')
	return t == "" || t[i+1:] == "." || t[i+1:] == ".."
}

// openDir opens the directory full names ("dir/.", "..", "/") in the
// sandbox's view and decides on where it landed.
//
// O_TMPFILE there ("." is what tempfile libraries pass) makes an unnamed
// file in that directory, decided as a write of the directory (naming it
// later is a linkat, decided then).
func (b *Broker) openDir(c *call, op, full string, flags int, mode uint32) result {
	root, err := c.rootFD()
	if err != nil {
		return fail(err)
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		dir, err := unix.Openat2(root, full, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveFlags})
		if err != nil {
			return fail(err)
		}
		c.keep(dir)
		p, err := fdPath(dir)
		if err != nil || !b.check(op, p) {
			return fail(unix.EACCES)
		}
		c.applyUmask()
		fd, err := unix.Openat(dir, ".", flags|unix.O_CLOEXEC, mode)
		if err != nil {
			return fail(err)
		}
		return result{fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}
	}
	fd, err := unix.Openat2(root, full, &unix.OpenHow{Flags: uint64(flags|unix.O_CLOEXEC) &^ unix.O_CREAT, Resolve: resolveFlags})
	if err != nil {
		return fail(err)
	}
	p, err := fdPath(fd)
	if err != nil || !b.checkMode(op, p, flags&writeFlags == 0) || !b.procAllowed(c, op, p, flags&writeFlags == 0) {
		unix.Close(fd)
		return fail(unix.EACCES)
	}
	return result{fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}
}

// nsIDs are the caller's process and thread ids in its own (innermost) pid
// namespace: the last numbers of NStgid and NSpid in /proc/PID/status.
func (c *call) nsIDs() (tgid, tid string, ok bool) {
	data, err := readFile("/proc/" + strconv.Itoa(c.pid) + "/status")
	if err != nil {
		return "", "", false
	}
	last := func(key string) string {
		i := bytes.Index(data, []byte("\n"+key+":\t"))
		if i < 0 {
			return ""
		}
		line := data[i+len(key)+3:]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			return ""
		}
		return string(f[len(f)-1])
	}
	tgid, tid = last("NStgid"), last("NSpid")
	return tgid, tid, tgid != "" && tid != ""
}

// openProc opens l's name with flags; under /proc without CAP_SYS_PTRACE
// in effect (it stays permitted, and is raised again after), so the
// kernel decides the caller's access to another process's entries as it
// would for the caller.
func openProc(l loc, flags int, mode uint32) (int, error) {
	if !strings.HasPrefix(l.path, "/proc/") {
		return unix.Openat(l.dir, l.name, flags, mode)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return -1, unix.EACCES
	}
	saved := data
	data[0].Effective &^= 1 << unix.CAP_SYS_PTRACE
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return -1, unix.EACCES
	}
	fd, err := unix.Openat(l.dir, l.name, flags, mode)
	// Should raising it again fail, the worker runs on without it: reading
	// a non-dumpable caller then fails, closed.
	_ = unix.Capset(&hdr, &saved[0])
	return fd, err
}

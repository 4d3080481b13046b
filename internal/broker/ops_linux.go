package broker

import (
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/awake"
	"github.com/cordon-run/cordon/mounts/decide"
)

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

func afterShort() <-chan time.Time { return time.After(5 * time.Millisecond) }

// setidBits is S_ISUID|S_ISGID: no brokered call sets them (spec's seccomp
// narrowing refuses them in the kernel for the calls it does not broker).
const setidBits = 0o6000

// writeFlags are the open flags that make the broker decide an open.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// result is a call's answer: a value, a descriptor to install, or an errno.
type result struct {
	val     int64
	fd      int
	cloexec bool
	errno   unix.Errno
	// created is the file the broker made for this open, removed again
	// when the descriptor cannot be installed (a full descriptor table):
	// the kernel's open makes nothing then.
	created *loc
	// again says the call's directory moved before its lock was taken
	// (see xlock_linux.go): it is run again, its paths resolved anew.
	again bool
	// cont lets the call continue in the kernel: only umask(2) and a
	// watched clone(2), which name nothing (see umasks, watchClone).
	cont bool
}

func fail(err error) result { return result{fd: -1, errno: errnoOf(err)} }
func ok(v int64) result     { return result{val: v, fd: -1} }

// handle decides and performs one notification, then answers it.
//
// What is read from the caller is checked to come from it (call.live)
// before it is acted on; a caller that dies after that gets no answer
// (the kernel drops it), so the result is not checked again.
//
// holding says the worker holds the baton; handle returns whether it still
// does (call.mayBlock may have passed it on).
//
// umask is the worker thread's umask as it last set it (-1: unknown).
// seen says the caller's kept entry was found current by peek.
func (b *Broker) handle(n *notif, holding bool, umask *int, seen bool) bool {
	// handle runs on a worker's thread, which unshared CLONE_FS (ownFS).
	c := &call{b: b, n: n, pid: int(n.Pid), holding: holding, threadUmask: umask, fsSeen: seen, ownFS: true}
	defer c.close()
	b.umasks.settle(c.pid)
	b.names.RLock() // publishing makes a name (see nameLock)
	b.publishGitFiles(false)
	b.names.RUnlock()
	var r result
	if n.Arch != nativeArch {
		r = fail(unix.ENOSYS)
	} else if sc, known := lookupCall(n.Nr); !known {
		r = fail(unix.ENOSYS)
	} else {
		unlock := b.nameLock(sc.name)
		r = sc.run(b, c, n.Args)
		for i := 0; r.again && i < maxAgain; i++ {
			r = sc.run(b, c, n.Args)
		}
		if r.again {
			r = fail(unix.EAGAIN)
		}
		unlock()
		if r.errno == unix.EROFS && c.last != "" {
			b.observe(Denial{Op: sc.name, Path: c.last, Rule: ReadOnly}, c.pid)
		}
	}
	if r.fd >= 0 {
		// The install wakes the caller on an idle CPU if there is one,
		// and this worker again after (each a halted vCPU's wake-up on a
		// VM): keep the other CPU busy. Answers without a descriptor are
		// handed over on this CPU and need no keeper.
		if b.awake {
			awake.Poke()
		}
		if err := sendFD(b.fd, n.ID, r.fd, r.cloexec); err != nil {
			r.uncreate()
			respond(b.fd, n.ID, 0, errnoOf(err))
		}
		unix.Close(r.fd)
		return c.holding
	}
	if r.cont {
		respondContinue(b.fd, n.ID)
		return c.holding
	}
	respond(b.fd, n.ID, r.val, r.errno)
	return c.holding
}

// sysc is one brokered system call: its name and how it is performed.
type sysc struct {
	name string
	run  func(b *Broker, c *call, a [6]uint64) result
}

// checkCreate is check for a name that does not exist yet, with git's
// templates let through (see git_linux.go).
func (b *Broker) checkCreate(op, p string, dir bool) bool {
	rule := b.policy.Refuse(p)
	if rule == "" || decide.TemplateAllowed(rule, p, dir) {
		return true
	}
	b.deny(op, p, rule)
	return false
}

// check refuses p when a rule forbids changing it, and records why.
func (b *Broker) check(op, p string) bool {
	if rule := b.policy.Refuse(p); rule != "" {
		b.deny(op, p, rule)
		return false
	}
	return true
}

func dirfdArg(v uint64) int32 { return int32(v) }

// --- open ----------------------------------------------------------------

func (b *Broker) open(c *call, op string, dirfd int32, pathAddr uint64, flags int, mode uint32) result {
	cloexec := flags&unix.O_CLOEXEC != 0
	// A read (the filter sends those only with strict_deny) is decided on
	// the deny rules alone: a protected path stays readable. The flags are
	// the caller's registers at the call, which no other thread can change.
	read := flags&writeFlags == 0
	if (flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE) && mode&setidBits != 0 {
		return fail(unix.EPERM) // an unnamed file can be linked in later
	}
	full, err := c.fullAt(dirfd, pathAddr)
	if err != nil {
		return fail(err)
	}
	for range 40 {
		if fd, isMagic := magicFD(full); isMagic {
			return b.reopenCallerFD(c, op, fd, flags)
		}
		full = c.procSelf(full)
		if dotName(full) {
			return b.openDir(c, op, full, flags, mode)
		}
		l, err := c.atFull(full)
		if err != nil {
			return fail(err)
		}
		r, again, done := b.createFirst(c, l, flags, mode)
		if again {
			return retry() // see retryOpen
		}
		if done {
			return r
		}
		var st unix.Stat_t
		err = unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			if flags&unix.O_NOFOLLOW != 0 || flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
				return fail(unix.ELOOP)
			}
			target, err := readlinkat(l.dir, l.name)
			if err != nil {
				return fail(err)
			}
			if strings.HasPrefix(target, "/") {
				full = target
			} else {
				full = l.path[:strings.LastIndexByte(l.path, '/')+1] + target
			}
			continue
		case err == nil:
			if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
				return fail(unix.EEXIST)
			}
			if !b.checkMode(op, l.path, read) {
				return fail(unix.EACCES)
			}
			if !read && gitLinkName(l.path) && st.Mode&unix.S_IFMT == unix.S_IFREG {
				return b.openGitFile(c, op, l, flags, mode, true)
			}
			if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
				c.mayBlock() // a FIFO's open waits for its other end
				if t == unix.S_IFIFO {
					defer b.fifoWait(l, flags)()
				}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(5, 0) {
				// /dev/tty means the opener's controlling terminal, which
				// the broker does not share: open that terminal itself.
				pts, err := controllingPTS(c.pid)
				if err != nil {
					return fail(err)
				}
				full = pts
				continue
			}
			if flags&unix.O_TMPFILE == unix.O_TMPFILE {
				c.applyUmask() // an unnamed file, made with the caller's mode
			}
			if !b.procAllowed(c, op, l.path, read) {
				return fail(unix.EACCES)
			}
			unlockBare := func() {}
			if !read && st.Mode&unix.S_IFMT == unix.S_IFREG && decide.Relevant(l.path) {
				// Held until the file is open: a shape completed
				// meanwhile rewrites the config this open would get.
				var r result
				var locked bool
				if unlockBare, r, locked = b.bareLock(c, op, l); !locked {
					return r // r.again: see retryOpen
				}
				if rule := b.bareWrite(c, l); rule != "" {
					unlockBare()
					b.deny(op, l.path, rule)
					return fail(unix.EACCES)
				}
			}
			fd, err := openProc(l, (flags|unix.O_NOFOLLOW|unix.O_CLOEXEC)&^unix.O_CREAT, mode)
			unlockBare()
			if err == unix.ELOOP {
				continue // replaced by a symlink meanwhile: resolve again
			}
			if err != nil {
				return fail(err)
			}
			return result{fd: fd, cloexec: cloexec}
		case err == unix.ENOENT && flags&unix.O_CREAT != 0:
			r, again := b.create(c, op, l, flags, mode)
			if again {
				return retry() // see retryOpen
			}
			return r
		default:
			return fail(err)
		}
	}
	return fail(unix.ELOOP)
}

// retryOpen: an open whose directory moved while it was decided and made
// (call.moved: the host, or another sandbox on the workspace, renamed it),
// or whose name changed meanwhile, is run again from its arguments
// (handle), not from the path it had built: a relative path starts again
// at the caller's working directory, read again, which the kernel moved
// with the directory. Resolved again from the old path, it went where the
// old name leads now (a symlink the host put there, into a protected
// directory: refused, where the kernel's own create had succeeded).
// TestBrokerCreateCwdMovedAfterCreate.

// --- names ---------------------------------------------------------------

func (b *Broker) mkdir(c *call, op string, dirfd int32, pathAddr uint64, mode uint32) result {
	if mode&setidBits != 0 {
		return fail(unix.EPERM)
	}
	p, err := c.str(pathAddr)
	if err != nil {
		return fail(err)
	}
	if dotName(p) && p != "" {
		// mkdir of "x/." or "..": the kernel answers EEXIST for a
		// directory that exists (tar extracting "./" relies on it).
		if _, _, err := c.follow(dirfd, p, false); err != nil {
			return fail(err)
		}
		return fail(unix.EEXIST)
	}
	l, err := c.at(dirfd, p)
	if err != nil {
		return fail(err)
	}
	if !b.checkCreate(op, l.path, true) {
		return fail(unix.EACCES)
	}
	unlock, r, made := b.lockedMake(c, op, l, true)
	if !made {
		return r
	}
	defer unlock()
	c.applyUmask()
	if r := landed(unix.Mkdirat(l.dir, l.name, mode), l, true); r.errno != 0 || r.again {
		return r
	}
	b.rememberGuarded(l.path, l.dir, l.name)
	return ok(0)
}

func (b *Broker) mknod(c *call, op string, dirfd int32, pathAddr uint64, mode uint32, dev uint64) result {
	if mode&setidBits != 0 {
		return fail(unix.EPERM)
	}
	l, err := c.atPath(dirfd, pathAddr)
	if err != nil {
		return fail(err)
	}
	if !b.check(op, l.path) {
		return fail(unix.EACCES)
	}
	unlock, r, made := b.lockedMake(c, op, l, false)
	if !made {
		return r
	}
	defer unlock()
	c.applyUmask()
	return landed(unix.Mknodat(l.dir, l.name, mode, int(dev)), l, false)
}

func (b *Broker) unlink(c *call, op string, dirfd int32, pathAddr uint64, flags int) result {
	l, err := c.atPath(dirfd, pathAddr)
	if err != nil {
		return fail(err)
	}
	// What the broker let git make in a guarded place this run (its
	// templates, a new repository's config) the command may remove again.
	var st unix.Stat_t
	mine := unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && b.git.wroteIt(st)
	if !mine && !b.check(op, l.path) {
		return fail(unix.EACCES)
	}
	if err := unix.Unlinkat(l.dir, l.name, flags); err != nil {
		return fail(err)
	}
	if mine {
		b.git.forget(st) // its inode number may come back for another file
	}
	return ok(0)
}

func (b *Broker) rename(c *call, op string, a [6]uint64, oldArg, newArg int, flags uint) result {
	from, err := c.atPath(dirfdArg(a[oldArg]), a[oldArg+1])
	if err != nil {
		return fail(err)
	}
	to, err := c.atPath(dirfdArg(a[newArg]), a[newArg+1])
	if err != nil {
		return fail(err)
	}
	if !b.check(op, from.path) {
		return fail(unix.EACCES)
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	shape := decide.Relevant(to.path) || exchange && decide.Relevant(from.path)
	h := b.newHold(op)
	if shape {
		h = b.newShapeHold(op)
	}
	defer h.release()
	if shape {
		if r, locked := h.lockShapes(c, renameShapes(from, to, exchange)...); !locked {
			return r
		}
		if flags == 0 && decide.ConfigReplaced(b.rules(), decide.FD{Dirfd: to.dir}, to.path) {
			// git replaces a repository's config as config.lock renamed
			// over it: checked and written through the broker's copy, and
			// only over a config the broker wrote.
			var st unix.Stat_t
			if !isRegular(from) || unix.Fstatat(to.dir, to.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && !b.git.wroteIt(st) {
				b.deny(op, to.path, bareRule+": config is git's to write")
				return fail(unix.EACCES)
			}
			return b.renameGitConfig(op, from, to)
		}
		if rule := b.bareMake(c, to, false); rule != "" {
			b.deny(op, to.path, rule)
			return fail(unix.EACCES)
		}
		if flags&unix.RENAME_EXCHANGE != 0 {
			if rule := b.bareMake(c, from, false); rule != "" {
				b.deny(op, from.path, rule)
				return fail(unix.EACCES)
			}
		}
	}
	if decide.RedirectPlace(to.path) && isSymlink(from) ||
		flags&unix.RENAME_EXCHANGE != 0 && decide.RedirectPlace(from.path) && isSymlink(to) {
		b.deny(op, to.path, gitSymlinkRule)
		return fail(unix.EACCES)
	}
	if isSymlink(from) {
		if rule := b.leads(to.path); rule != "" {
			b.deny(op, to.path, rule)
			return fail(unix.EACCES)
		}
	}
	if flags&unix.RENAME_EXCHANGE != 0 && isSymlink(to) {
		if rule := b.leads(from.path); rule != "" {
			b.deny(op, from.path, rule)
			return fail(unix.EACCES)
		}
	}
	if gitLinkName(to.path) && b.policy.Refuse(to.path) == "" && flags&unix.RENAME_EXCHANGE == 0 && isRegular(from) {
		return b.renameGitFile(c, op, from, to)
	}
	if flags&unix.RENAME_EXCHANGE != 0 && (gitLinkName(to.path) || gitLinkName(from.path)) && !(isDir(from) && isDir(to)) {
		b.deny(op, to.path, "protect (a .git file is only written, not exchanged)")
		return fail(unix.EACCES)
	}
	if rule := b.policy.Refuse(to.path); rule != "" {
		if strings.HasPrefix(rule, "protect ") && gitConfigName(to.path) && flags == 0 && !isDir(from) {
			return b.renameGitConfig(op, from, to)
		}
		b.deny(op, to.path, rule)
		return fail(unix.EACCES)
	}
	if isDir(from) || exchange && isDir(to) {
		return b.moveTree(c, h, op, from, to, flags)
	}
	return renamed(unix.Renameat2(from.dir, from.name, to.dir, to.name, flags), from, to, flags)
}

func (b *Broker) link(c *call, op string, a [6]uint64, flags int) result {
	to, err := c.atPath(dirfdArg(a[2]), a[3])
	if err != nil {
		return fail(err)
	}
	if !b.check(op, to.path) {
		return fail(unix.EACCES)
	}
	if gitLinkName(to.path) {
		// A second name would be a .git file the broker never read.
		b.deny(op, to.path, "protect (a .git file is only written, not linked)")
		return fail(unix.EACCES)
	}
	unlock, r, made := b.lockedMake(c, op, to, false)
	if !made {
		return r
	}
	defer unlock()
	var src int
	if flags&unix.AT_EMPTY_PATH != 0 {
		p, err := c.str(a[1])
		if err == nil && p == "" {
			// linkat(fd, "", ...): the caller's descriptor (an O_TMPFILE).
			fd, err := unix.Open("/proc/"+strconv.Itoa(c.pid)+"/fd/"+strconv.Itoa(int(int32(a[0]))), unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return fail(unix.EBADF)
			}
			src = c.keep(fd)
			if err := c.live(); err != nil {
				return fail(err)
			}
			if fp, err := fdPath(src); err == nil && (!b.check(op, fp) || !b.bareWriteOK(c, op, fp)) {
				return fail(unix.EACCES)
			}
			if !b.linkedSymlinkOK(op, src, to) {
				return fail(unix.EACCES)
			}
			return landed(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(src), to.dir, to.name, unix.AT_SYMLINK_FOLLOW), to, false)
		}
	}
	pathAddr := a[1]
	p, err := c.str(pathAddr)
	if err != nil {
		return fail(err)
	}
	fd, srcPath, err := c.follow(dirfdArg(a[0]), p, flags&unix.AT_SYMLINK_FOLLOW == 0)
	if err != nil {
		return fail(err)
	}
	// A second name for a protected or denied file would be a way to
	// write or read it.
	if !b.check(op, srcPath) || !b.bareWriteOK(c, op, srcPath) {
		return fail(unix.EACCES)
	}
	if !b.linkedSymlinkOK(op, fd, to) {
		return fail(unix.EACCES)
	}
	return landed(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), to.dir, to.name, unix.AT_SYMLINK_FOLLOW), to, false)
}

func (b *Broker) symlink(c *call, op string, targetAddr uint64, dirfd int32, pathAddr uint64) result {
	target, err := c.str(targetAddr)
	if err != nil {
		return fail(err)
	}
	l, err := c.atPath(dirfd, pathAddr)
	if err != nil {
		return fail(err)
	}
	if !b.check(op, l.path) {
		return fail(unix.EACCES)
	}
	if decide.RedirectPlace(l.path) && !gitProbeSymlink(l.path, target) {
		b.deny(op, l.path, gitSymlinkRule)
		return fail(unix.EACCES)
	}
	if rule := b.leads(l.path); rule != "" {
		b.deny(op, l.path, rule)
		return fail(unix.EACCES)
	}
	unlock, r, made := b.lockedMake(c, op, l, false)
	if !made {
		return r
	}
	defer unlock()
	return landed(unix.Symlinkat(target, l.dir, l.name), l, false)
}

// chmod changes the mode of the file the path names (following a final
// symlink, as chmod does, unless AT_SYMLINK_NOFOLLOW; an empty path with
// AT_EMPTY_PATH is the descriptor).
func (b *Broker) chmod(c *call, op string, dirfd int32, pathAddr uint64, mode uint32, flags int) result {
	if mode&setidBits != 0 {
		return fail(unix.EPERM)
	}
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return fail(unix.EINVAL)
	}
	p, err := c.str(pathAddr)
	if err != nil {
		return fail(err)
	}
	if p == "" && flags&unix.AT_EMPTY_PATH != 0 {
		if dirfd == unix.AT_FDCWD {
			t, err := b.cwdTarget(c, op)
			if err != nil {
				return fail(err)
			}
			return errResult(unix.Fchmodat(unix.AT_FDCWD, t.proc(), mode, 0))
		}
		return b.fchmod(c, op, dirfd, mode)
	}
	fd, path, err := c.follow(dirfd, p, flags&unix.AT_SYMLINK_NOFOLLOW != 0)
	if err != nil {
		return fail(err)
	}
	// git probes the file system's modes on the config it just wrote: a
	// config the broker wrote (see git_linux.go) may change its mode.
	var st unix.Stat_t
	mine := gitConfigName(path) && unix.Fstat(fd, &st) == nil && b.git.wroteIt(st)
	if !mine && !b.check(op, path) {
		return fail(unix.EACCES)
	}
	return errResult(unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0))
}

func (b *Broker) truncate(c *call, op string, pathAddr uint64, length int64) result {
	p, err := c.str(pathAddr)
	if err != nil {
		return fail(err)
	}
	fd, path, err := c.follow(unix.AT_FDCWD, p, false)
	if err != nil {
		return fail(err)
	}
	if !b.check(op, path) {
		return fail(unix.EACCES)
	}
	if decide.Relevant(path) {
		if l, err := c.atFull(path); err == nil {
			unlock, r, locked := b.bareLock(c, op, l)
			if !locked {
				return r
			}
			defer unlock()
		}
	}
	if !b.bareWriteOK(c, op, path) {
		return fail(unix.EACCES)
	}
	return errResult(unix.Truncate("/proc/self/fd/"+strconv.Itoa(fd), length))
}

func (c *call) atPath(dirfd int32, pathAddr uint64) (loc, error) {
	p, err := c.str(pathAddr)
	if err != nil {
		return loc{}, err
	}
	return c.at(dirfd, p)
}

func errResult(err error) result {
	if err != nil {
		return fail(err)
	}
	return ok(0)
}

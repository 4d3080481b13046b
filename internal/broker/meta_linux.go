package broker

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Calls that change a file's metadata but not its name or contents: its
// mode, owner, times and extended attributes. They are decided on the
// file they would change, found as every brokered path is (in the
// sandbox's view, with openat2 and RESOLVE_IN_ROOT), or, for the calls on
// a descriptor, on the file the caller's descriptor refers to (taken from
// the caller with pidfd_getfd, so the broker acts on that very open file
// and the caller cannot swap it after the check). A protected or denied
// file's metadata never changes: a mode bit that makes a planted hook
// executable is a way to run code on the host.

// noID is (uid_t)-1: chown leaves that id as it is.
const noID = 0xffffffff

// fdTarget is the file behind the caller's descriptor fd, held by the
// broker: a duplicate of the caller's open file (raw), or, where the
// kernel cannot hand it over (a thread other than its process's leader,
// before Linux 6.9), an O_PATH descriptor of the same file.
type fdTarget struct {
	fd   int
	raw  bool   // fd is the caller's own open file (pidfd_getfd)
	path string // the sandbox path, "" for a file with no name (a pipe, a socket, an unlinked file)
}

// pidfdThread is PIDFD_THREAD (O_EXCL): a pidfd of this thread, not of its
// process's leader.
const pidfdThread = unix.O_EXCL

// target takes the caller's descriptor fd and decides on what it refers
// to. A file with a path is decided at that path; a pipe, a socket or an
// anonymous inode names nothing in any tree and is let through; a file
// unlinked from every directory is let through too (what it may become by
// linkat is decided then), but one that still has a name the kernel does
// not show is refused (fail closed).
func (b *Broker) target(c *call, op string, fd int32) (fdTarget, error) {
	if fd < 0 {
		return fdTarget{}, unix.EBADF
	}
	t := fdTarget{fd: -1}
	if nfd, err := c.takeFD(fd); err == nil {
		t.fd, t.raw = nfd, true
	} else {
		nfd, err := unix.Open("/proc/"+strconv.Itoa(c.pid)+"/fd/"+strconv.Itoa(int(fd)), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fdTarget{}, unix.EBADF
		}
		t.fd = c.keep(nfd)
		if err := c.live(); err != nil {
			return fdTarget{}, err
		}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(t.fd), buf)
	if err != nil {
		return fdTarget{}, unix.EBADF
	}
	p := string(buf[:n])
	if !strings.HasPrefix(p, "/") {
		return t, nil // pipe:[N], socket:[N], anon_inode:...
	}
	if dead, ok := strings.CutSuffix(p, " (deleted)"); ok {
		var st unix.Stat_t
		if unix.Fstat(t.fd, &st) == nil && st.Nlink == 0 {
			return t, nil
		}
		b.deny(op, dead, "a file that was renamed over or removed but still has another name is not changed")
		return fdTarget{}, unix.EACCES
	}
	t.path = p
	if !b.check(op, p) {
		return fdTarget{}, unix.EACCES
	}
	return t, nil
}

// pathTarget resolves (dirfd, path) as the metadata calls do (following a
// final symlink unless nofollow; an empty path with AT_EMPTY_PATH is the
// descriptor itself) and decides on the file it names.
func (b *Broker) pathTarget(c *call, op string, dirfd int32, pathAddr uint64, nofollow, emptyPath bool) (fdTarget, error) {
	p, err := c.str(pathAddr)
	if err != nil {
		return fdTarget{}, err
	}
	if p == "" && emptyPath {
		if dirfd == unix.AT_FDCWD {
			return b.cwdTarget(c, op)
		}
		return b.target(c, op, dirfd)
	}
	fd, path, err := c.follow(dirfd, p, nofollow)
	if err != nil {
		return fdTarget{}, err
	}
	if !b.check(op, path) {
		return fdTarget{}, unix.EACCES
	}
	return fdTarget{fd: fd, path: path}, nil
}

// cwdTarget is the caller's working directory (AT_FDCWD with an empty
// path and AT_EMPTY_PATH).
func (b *Broker) cwdTarget(c *call, op string) (fdTarget, error) {
	d, err := c.dirOf(unix.AT_FDCWD)
	if err != nil {
		return fdTarget{}, err
	}
	root, err := c.rootFD()
	if err != nil {
		return fdTarget{}, err
	}
	fd, err := unix.Openat2(root, d, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		return fdTarget{}, err
	}
	c.keep(fd)
	p, err := fdPath(fd)
	if err != nil {
		return fdTarget{}, err
	}
	if !b.check(op, p) {
		return fdTarget{}, unix.EACCES
	}
	return fdTarget{fd: fd, path: p}, nil
}

// proc is the path through which a held O_PATH descriptor is acted on:
// the kernel's magic link jumps to the very file (a symlink stays the
// symlink; it is not followed again).
func (t fdTarget) proc() string { return "/proc/self/fd/" + strconv.Itoa(t.fd) }

// --- mode ----------------------------------------------------------------

func (b *Broker) fchmod(c *call, op string, fd int32, mode uint32) result {
	if mode&setidBits != 0 {
		return fail(unix.EPERM)
	}
	t, err := b.target(c, op, fd)
	if err != nil {
		return fail(err)
	}
	if t.raw {
		return errResult(unix.Fchmod(t.fd, mode))
	}
	return errResult(unix.Fchmodat(unix.AT_FDCWD, t.proc(), mode, 0))
}

// --- owner ---------------------------------------------------------------

// hostIDs maps the caller's uid and gid (as its user namespace numbers
// them) to the broker's; -1 stays -1 and an id the namespace does not map
// is EINVAL, as the kernel answers.
func (b *Broker) hostIDs(c *call, uid, gid uint32) (int, int, error) {
	if uid == noID && gid == noID {
		return -1, -1, nil
	}
	// The caller's user namespace, once for both maps.
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(c.pid)+"/ns/user", &st); err != nil {
		return 0, 0, unix.EINVAL
	}
	u, err := c.mapID(&b.ids, st.Ino, "uid_map", uid)
	if err != nil {
		return 0, 0, err
	}
	g, err := c.mapID(&b.ids, st.Ino, "gid_map", gid)
	if err != nil {
		return 0, 0, err
	}
	return u, g, nil
}

// idMaps caches, for one broker, the parsed uid_map and gid_map of each
// user namespace its callers are in (all of a sandbox's, as a rule: it
// cannot make one), by the namespace's inode: reading them for every chown
// cost tar a third of each fchown.
type idMaps struct{ m sync.Map } // [2]uint64{ns inode, 0 uid / 1 gid} -> [][3]uint64

// mapID maps id through the caller's uid_map or gid_map (file), that of
// user namespace nsIno.
func (c *call) mapID(maps *idMaps, nsIno uint64, file string, id uint32) (int, error) {
	if id == noID {
		return -1, nil
	}
	key := [2]uint64{nsIno, 0}
	if file == "gid_map" {
		key[1] = 1
	}
	v, ok := maps.m.Load(key)
	if !ok {
		data, err := readFile("/proc/" + strconv.Itoa(c.pid) + "/" + file)
		if err != nil {
			return 0, unix.EINVAL
		}
		var ranges [][3]uint64
		for _, line := range bytes.Split(data, []byte("\n")) {
			f := bytes.Fields(line)
			if len(f) != 3 {
				continue
			}
			in, e1 := strconv.ParseUint(string(f[0]), 10, 32)
			out, e2 := strconv.ParseUint(string(f[1]), 10, 32)
			n, e3 := strconv.ParseUint(string(f[2]), 10, 32)
			if e1 == nil && e2 == nil && e3 == nil {
				ranges = append(ranges, [3]uint64{in, out, n})
			}
		}
		v, _ = maps.m.LoadOrStore(key, ranges)
	}
	for _, r := range v.([][3]uint64) {
		if uint64(id) >= r[0] && uint64(id)-r[0] < r[2] {
			return int(r[1] + uint64(id) - r[0]), nil
		}
	}
	return 0, unix.EINVAL
}

func (b *Broker) fchown(c *call, op string, fd int32, uid, gid uint32) result {
	u, g, err := b.hostIDs(c, uid, gid)
	if err != nil {
		return fail(err)
	}
	t, err := b.target(c, op, fd)
	if err != nil {
		return fail(err)
	}
	if t.raw {
		return errResult(unix.Fchown(t.fd, u, g))
	}
	return errResult(unix.Fchownat(t.fd, "", u, g, unix.AT_EMPTY_PATH))
}

func (b *Broker) chown(c *call, op string, dirfd int32, pathAddr uint64, uid, gid uint32, flags int) result {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return fail(unix.EINVAL)
	}
	u, g, err := b.hostIDs(c, uid, gid)
	if err != nil {
		return fail(err)
	}
	t, err := b.pathTarget(c, op, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW != 0, flags&unix.AT_EMPTY_PATH != 0)
	if err != nil {
		return fail(err)
	}
	if t.raw {
		return errResult(unix.Fchown(t.fd, u, g))
	}
	return errResult(unix.Fchownat(t.fd, "", u, g, unix.AT_EMPTY_PATH))
}

// --- times ---------------------------------------------------------------

// timesKind is how a call passes its times: two timespecs (utimensat), two
// timevals (utimes, futimesat) or a utimbuf of two time_t (utime).
type timesKind int

const (
	timespecs timesKind = iota
	timevals
	utimbuf
)

// times copies the caller's times out of its memory as the two timespecs
// utimensat takes; a NULL pointer is nil (now).
func (c *call) times(addr uint64, kind timesKind) ([]unix.Timespec, error) {
	if addr == 0 {
		return nil, nil
	}
	size := map[timesKind]int{timespecs: 32, timevals: 32, utimbuf: 16}[kind]
	buf := make([]byte, size)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(size)}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: size}}
	if n, err := unix.ProcessVMReadv(c.pid, local, remote, 0); err != nil || n != size {
		return nil, unix.EFAULT
	}
	w := func(i int) int64 { return int64(binary.LittleEndian.Uint64(buf[8*i:])) }
	switch kind {
	case timevals:
		ts := make([]unix.Timespec, 2)
		for i := range ts {
			sec, usec := w(2*i), w(2*i+1)
			if usec < 0 || usec >= 1000000 {
				return nil, unix.EINVAL
			}
			ts[i] = unix.Timespec{Sec: sec, Nsec: usec * 1000}
		}
		return ts, nil
	case utimbuf:
		return []unix.Timespec{{Sec: w(0)}, {Sec: w(1)}}, nil
	}
	return []unix.Timespec{{Sec: w(0), Nsec: w(1)}, {Sec: w(2), Nsec: w(3)}}, nil
}

// utimensat performs utimensat(fd, path, times, flags) on a held
// descriptor: a NULL path (futimens) acts on fd itself.
func utimensat(fd int, path *byte, ts []unix.Timespec, flags int) error {
	var p unsafe.Pointer
	if len(ts) == 2 {
		p = unsafe.Pointer(&ts[0])
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), uintptr(unsafe.Pointer(path)), uintptr(p), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (b *Broker) utimes(c *call, op string, dirfd int32, pathAddr, timesAddr uint64, kind timesKind, flags int) result {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return fail(unix.EINVAL)
	}
	ts, err := c.times(timesAddr, kind)
	if err != nil {
		return fail(err)
	}
	var t fdTarget
	if pathAddr == 0 && kind != utimbuf {
		// futimens: utimensat(fd, NULL, ...) acts on the descriptor (so
		// does futimesat).
		if flags != 0 {
			return fail(unix.EINVAL)
		}
		if dirfd == unix.AT_FDCWD {
			return fail(unix.EFAULT)
		}
		t, err = b.target(c, op, dirfd)
	} else {
		t, err = b.pathTarget(c, op, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW != 0, flags&unix.AT_EMPTY_PATH != 0)
	}
	if err != nil {
		return fail(err)
	}
	if t.raw {
		return errResult(utimensat(t.fd, nil, ts, 0))
	}
	empty := []byte{0}
	return errResult(utimensat(t.fd, &empty[0], ts, unix.AT_EMPTY_PATH))
}

// --- extended attributes -------------------------------------------------

// xattrSizeMax is XATTR_SIZE_MAX: a larger value is E2BIG.
const xattrSizeMax = 65536

func (c *call) bytesAt(addr uint64, size int) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	buf := make([]byte, size)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(size)}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: size}}
	if n, err := unix.ProcessVMReadv(c.pid, local, remote, 0); err != nil || n != size {
		return nil, unix.EFAULT
	}
	return buf, nil
}

// xattrCall is a setxattr (set) or removexattr call: on the caller's
// descriptor fd (byFD) or by path, following a final symlink unless
// nofollow.
type xattrCall struct {
	set              bool
	byFD             bool
	fd               int32
	pathAddr         uint64
	nofollow         bool
	nameAddr, valAdr uint64
	size             uint64
	flags            int
}

func (b *Broker) xattr(c *call, op string, x xattrCall) result {
	name, err := c.str(x.nameAddr)
	if err != nil {
		return fail(err)
	}
	if name == "" || len(name) > 255 {
		return fail(unix.ERANGE)
	}
	var val []byte
	if x.set {
		if x.size > xattrSizeMax {
			return fail(unix.E2BIG)
		}
		if val, err = c.bytesAt(x.valAdr, int(x.size)); err != nil {
			return fail(err)
		}
	}
	var t fdTarget
	if x.byFD {
		t, err = b.target(c, op, x.fd)
	} else {
		t, err = b.pathTarget(c, op, unix.AT_FDCWD, x.pathAddr, x.nofollow, false)
	}
	if err != nil {
		return fail(err)
	}
	switch {
	case t.raw && x.set:
		return errResult(unix.Fsetxattr(t.fd, name, val, x.flags))
	case t.raw:
		return errResult(unix.Fremovexattr(t.fd, name))
	case x.set:
		return errResult(unix.Setxattr(t.proc(), name, val, x.flags))
	}
	return errResult(unix.Removexattr(t.proc(), name))
}

package broker

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// call is one notified system call being decided: the caller, its
// arguments, and the descriptors opened to answer it.
type call struct {
	b    *Broker
	n    *notif
	pid  int
	fds  []int
	last string // the sandbox path last resolved for this call
	// holding says the worker performing the call holds the baton.
	holding bool
	// threadUmask is the worker thread's umask as it last set it (-1:
	// unknown; nil: not tracked).
	threadUmask *int
	// fsSeen says the caller's kept umask was found current in this call
	// (see umasks.cachedSeen).
	fsSeen bool
	// ownFS says the call runs on a worker's thread, whose working
	// directory is its own (see dirPath).
	ownFS bool
	// inDir is 1 + the descriptor (one of fds) this thread's working
	// directory was last set to in this call, 0 for none.
	inDir int
}

func (c *call) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

func (c *call) keep(fd int) int {
	c.fds = append(c.fds, fd)
	return fd
}

// str copies the NUL-terminated string at addr out of the caller's memory,
// page by page (a string may end just before an unmapped page). The copy is
// what is decided on and acted on: the caller cannot change it afterwards.
func (c *call) str(addr uint64) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var out []byte
	var page [4096]byte // on the stack: a call allocates nothing for it
	buf := page[:]
	for len(out) <= unix.PathMax {
		n := 4096 - int(addr%4096)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(n)}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}
		got, err := unix.ProcessVMReadv(c.pid, local, remote, 0)
		if err != nil {
			return "", unix.EFAULT
		}
		if i := bytes.IndexByte(buf[:got], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return "", unix.ENAMETOOLONG
}

// rootFD is the sandbox's root directory (the callers' own): every path is
// resolved in the sandbox's own view, never in cordon's.
func (c *call) rootFD() (int, error) {
	return c.b.sandboxRoot(c)
}

// live checks that the call is still pending, so that what was read from
// the caller (its path, its working directory, its descriptor) was read
// from the caller and not from a process that took its pid after it died:
// nothing read so is used before this check.
func (c *call) live() error {
	if !valid(c.b.fd, c.n.ID) {
		return unix.ESRCH
	}
	return nil
}

// fdPath returns the sandbox path of descriptor fd of this process (the
// kernel names a file of another mount namespace from that namespace's
// root). A file with no path (deleted, a pipe) is an error: nothing can
// be decided on it.
func fdPath(fd int) (string, error) {
	dir, err := selfFDs()
	if err != nil {
		return linkPath("/proc/self/fd/" + strconv.Itoa(fd))
	}
	return readlinkPath(dir, strconv.Itoa(fd))
}

// selfFDs is this process's /proc/self/fd, opened once (O_PATH): a
// descriptor's path is read as readlinkat(dir, "N"), one component to look
// up, where /proc/self/fd/N walked four and resolved the self link each
// time (two or three reads a brokered call). The directory stays this
// process's: /proc/self was resolved when it was opened.
var selfFDs = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
})

// procDir is this process's /proc, opened once (O_PATH): a caller's
// working directory is read as readlinkat(dir, "TID/cwd"), two components
// to look up where /proc/TID/cwd walked three from the root.
var procDir = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
})

// dirPath is fdPath for a directory: the same path, from the same kernel
// function (prepend_path, from this thread's root), read by fchdir(2) to
// the directory and getcwd(2) where the call runs on a worker's thread,
// which unshared CLONE_FS, so its working directory is its own and no
// path the broker uses is relative to it. The readlink of /proc/self/fd/N
// looks the descriptor up in /proc and revalidates its entry each time:
// fchdir and getcwd cost about 0.9 µs where it cost 1.4 (tmpfs, this VM;
// two reads a create). getcwd writes "(unreachable)" before a path that
// is not below this thread's root (the sandbox's, from another mount
// namespace: the same path the readlink gives without it) and fails with
// ENOENT for a removed directory, whose readlink ends in " (deleted)";
// a path that ends so is refused here too, as readlinkPath does. Any
// error (a directory the thread may not search: fchdir checks it) falls
// back to the readlink.
//
// The working directory is set again only when it is not that directory
// already: once the call set it to fd, one of the call's own descriptors,
// which stay open on the same file until the call ends (the read-back
// after a create, call.moved, is one getcwd).
func (c *call) dirPath(fd int) (string, error) {
	if !c.ownFS {
		return fdPath(fd)
	}
	if c.inDir != fd+1 {
		c.inDir = 0
		if unix.Fchdir(fd) != nil {
			return fdPath(fd)
		}
		if slices.Contains(c.fds, fd) {
			c.inDir = fd + 1
		}
	}
	if p, ok := cwdPath(); ok {
		return p, nil
	}
	return fdPath(fd)
}

// cwdPath returns the path of this thread's working directory from
// getcwd, as readlinkPath reads a descriptor's: see call.dirPath.
func cwdPath() (string, bool) {
	var page [unix.PathMax]byte // on the stack: a call allocates only the string
	n, err := unix.Getcwd(page[:])
	if err != nil || n < 1 {
		return "", false
	}
	p := page[:n-1] // getcwd counts the NUL
	p = bytes.TrimPrefix(p, []byte("(unreachable)"))
	if len(p) == 0 || p[0] != '/' || bytes.HasSuffix(p, []byte(" (deleted)")) {
		return "", false
	}
	return string(p), true
}

func linkPath(link string) (string, error) {
	return readlinkPath(unix.AT_FDCWD, link)
}

// readlinkPath reads the symlink (dir, name) of /proc that names a file
// by its path: an error for a file with no path.
func readlinkPath(dir int, name string) (string, error) {
	var page [unix.PathMax]byte // on the stack: a call allocates only the string
	buf := page[:]
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	p := string(buf[:n])
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return "", unix.ENOENT
	}
	return p, nil
}

// dirOf returns the sandbox path a relative path of the caller starts
// from: its working directory, or the directory dirfd names.
func (c *call) dirOf(dirfd int32) (string, error) {
	if dirfd == unix.AT_FDCWD {
		return c.cwd()
	}
	if dirfd < 0 {
		return "", unix.EBADF
	}
	p, err := linkPath(fmt.Sprintf("/proc/%d/fd/%d", c.pid, dirfd))
	if err != nil {
		return "", unix.EBADF
	}
	return p, nil
}

// fullAt is full for the path at pathAddr in the caller's memory.
func (c *call) fullAt(dirfd int32, pathAddr uint64) (string, error) {
	path, err := c.str(pathAddr)
	if err != nil {
		return "", err
	}
	return c.full(dirfd, path)
}

// full joins the caller's starting directory and path, without cleaning
// it: ".." is left to the kernel, which resolves it after symlinks.
// The call is checked to be still pending (live) once the path is read.
func (c *call) full(dirfd int32, path string) (string, error) {
	if path == "" {
		return "", unix.ENOENT
	}
	if !strings.HasPrefix(path, "/") {
		d, err := c.dirOf(dirfd)
		if err != nil {
			return "", err
		}
		path = d + "/" + path
	}
	if testHookRead != nil {
		testHookRead(c.n)
	}
	if err := c.live(); err != nil {
		return "", err
	}
	return path, nil
}

// testHookRead, set by a test, runs when a call's path was read from the
// caller, before the call is checked to be still pending.
var testHookRead func(n *notif)

// loc is a name in a directory the broker holds open: the operation acts
// on exactly the directory that was decided on, whatever the caller does to
// the path meanwhile.
type loc struct {
	dir  int    // O_PATH descriptor of the parent directory
	path string // the sandbox path of the name: parent's path + "/" + name
	name string
}

const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// at resolves (dirfd, path) to its parent directory, in the sandbox's view
// and inside its root, following symlinks in every component but the last.
func (c *call) at(dirfd int32, path string) (loc, error) {
	full, err := c.full(dirfd, path)
	if err != nil {
		return loc{}, err
	}
	return c.atFull(full)
}

func (c *call) atFull(full string) (loc, error) {
	trimmed := strings.TrimRight(full, "/")
	if trimmed == "" {
		return loc{}, unix.EBUSY // the root itself
	}
	i := strings.LastIndexByte(trimmed, '/')
	parent, name := trimmed[:i+1], trimmed[i+1:]
	if name == "." || name == ".." {
		return loc{}, unix.EINVAL
	}
	root, err := c.rootFD()
	if err != nil {
		return loc{}, err
	}
	fd, err := unix.Openat2(root, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		return loc{}, err
	}
	c.keep(fd)
	dir, err := c.dirPath(fd)
	if err != nil {
		return loc{}, unix.ENOENT
	}
	p := strings.TrimSuffix(dir, "/") + "/" + name
	c.last = p
	return loc{dir: fd, path: p, name: name}, nil
}

// follow resolves (dirfd, path) completely (symlinks in the last component
// too, unless nofollow) to an O_PATH descriptor and its sandbox path.
func (c *call) follow(dirfd int32, path string, nofollow bool) (int, string, error) {
	full, err := c.full(dirfd, path)
	if err != nil {
		return -1, "", err
	}
	root, err := c.rootFD()
	if err != nil {
		return -1, "", err
	}
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat2(root, full, &unix.OpenHow{Flags: flags, Resolve: resolveFlags})
	if err != nil {
		return -1, "", err
	}
	c.keep(fd)
	p, err := fdPath(fd)
	if err != nil {
		return -1, "", err
	}
	c.last = p
	return fd, p, nil
}

func readFile(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// magicFD recognizes the paths that name one of the caller's own
// descriptors (/dev/stdout, /proc/self/fd/N, ...): the kernel reopens the
// descriptor's file for them, which is what the broker does too.
func magicFD(full string) (int, bool) {
	// Each such path, cleaned, ends in "std..." or ".../fd/N": a path with
	// neither is none of them (cleanAbs, a split and a join, cost every
	// open about 5% of a brokered create).
	if !strings.Contains(full, "std") && !strings.Contains(full, "fd") {
		return 0, false
	}
	p := cleanAbs(full)
	switch p {
	case "/dev/stdin":
		return 0, true
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	for _, pre := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
				return n, true
			}
		}
	}
	return 0, false
}

func cleanAbs(p string) string {
	parts := strings.Split(p, "/")
	var out []string
	for _, s := range parts {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

package broker

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/decide"
)

// A renamed directory carries what lies below it: the broker walks it, so
// nothing in it is a guarded path where it is, nor becomes one where it
// goes.

// maxTreeEntries bounds the walk of a renamed directory; a larger tree is
// refused (fail closed).
const maxTreeEntries = 200000

// checkTree walks the directory at l and refuses when an entry below it is
// guarded at its path now or would be at its path under dst.
func (b *Broker) checkTree(c *call, op string, l loc, dst string) bool {
	c.mayBlock() // a tree of up to maxTreeEntries
	fd, err := unix.Openat(l.dir, l.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	root, err := c.rootFD()
	if err != nil {
		unix.Close(fd)
		return false
	}
	n := 0
	return b.walk(op, root, l.path, fd, l.path, dst, &n)
}

// walk decides each entry below src (and its twin below dst); a refusal is
// recorded for top, the directory the call named.
//
// A symlink may not enter a ".git" name or a place below a ".git"
// directory, and a ".git" file's redirect is decided again where it goes
// (a relative gitdir points elsewhere from there).
func (b *Broker) walk(op string, root int, top string, fd int, src, dst string, n *int) bool {
	f := os.NewFile(uintptr(fd), src)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return false
	}
	for _, e := range ents {
		*n++
		if *n > maxTreeEntries {
			b.deny(op, src, "a renamed directory with more than "+strconv.Itoa(maxTreeEntries)+" entries is not checked")
			return false
		}
		s, d := src+"/"+e.Name(), dst+"/"+e.Name()
		for _, p := range []string{s, d} {
			if rule := b.policy.Refuse(p); rule != "" {
				b.deny(op, top, rule+" (which "+p+" would leave or enter)")
				return false
			}
		}
		if e.Type()&os.ModeSymlink != 0 && decide.RedirectPlace(d) {
			b.deny(op, top, gitSymlinkRule+" (which "+d+" would be)")
			return false
		}
		if e.Type()&os.ModeSymlink != 0 {
			if rule := b.leads(d); rule != "" {
				b.deny(op, top, rule)
				return false
			}
		}
		if e.Type().IsRegular() && gitLinkName(d) && s != d {
			data, err := readAt(fd, e.Name(), decide.MaxGitFile+1)
			if err != nil {
				return false
			}
			if err := b.checkGitFile(root, d, data); err != nil {
				b.deny(op, top, "protect (a .git file from the sandbox: "+err.Error()+")")
				return false
			}
		}
		if e.IsDir() {
			cfd, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil || !b.walk(op, root, top, cfd, s, d, n) {
				return false
			}
		}
	}
	return true
}

// gitSymlinkRule is the refusal of a symlink at or below a ".git".
const gitSymlinkRule = "protect (no symlink at a .git name or in a .git directory's modules or worktrees: it would send git elsewhere)"

func isSymlink(l loc) bool {
	var st unix.Stat_t
	return unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func isRegular(l loc) bool {
	var st unix.Stat_t
	return unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// readAt reads up to max bytes of the regular file name in dir.
func readAt(dir int, name string, max int) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(max)))
}

func isDir(l loc) bool {
	var st unix.Stat_t
	return unix.Fstatat(l.dir, l.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// nameLock takes the names lock as call op needs it and returns its
// release. A rename holds it alone: checkTree walks a renamed directory
// and decides what it carries, and a name made in that directory by
// another worker between the walk and the move (mv x/hookz x/hooks while
// x becomes sub/.git) would be carried unchecked. The calls that make or
// remove a name share it; an open that creates takes it around the create
// alone (see open), because an open of an existing FIFO may wait.
func (b *Broker) nameLock(op string) func() {
	switch op {
	case "rename", "renameat", "renameat2":
		b.names.Lock()
		return b.names.Unlock
	case "mkdir", "mkdirat", "mknod", "mknodat", "unlink", "unlinkat", "rmdir",
		"link", "linkat", "symlink", "symlinkat", "bind":
		b.names.RLock()
		return b.names.RUnlock
	}
	return func() {}
}

// create makes the new file l for an open with O_CREAT, deciding and
// creating under the shared names lock (see nameLock), so no rename moves
// the directory between the decision and the create. again says the name
// appeared or became a symlink meanwhile: resolve it again. O_EXCL: a
// name decided as new is created as new; an existing one (a FIFO, whose
// open would wait holding the lock) is opened as such after resolving it
// again.
func (b *Broker) create(c *call, op string, l loc, flags int, mode uint32) (r result, again bool) {
	b.names.RLock()
	defer b.names.RUnlock()
	if !b.checkCreate(op, l.path, false) {
		return fail(unix.EACCES), false
	}
	defer b.bareLock(l.path)()
	if !b.bareOK(c, op, l, false) {
		return fail(unix.EACCES), false
	}
	if gitLinkName(l.path) {
		return b.openGitFile(c, op, l, flags, mode, false), false
	}
	unix.Umask(c.umask())
	fd, err := unix.Openat(l.dir, l.name, flags|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err == unix.ELOOP || err == unix.EEXIST && flags&unix.O_EXCL == 0 {
		return result{}, true
	}
	if err != nil {
		return fail(err), false
	}
	b.rememberGuarded(l.path, fd, "")
	return result{fd: fd, cloexec: flags&unix.O_CLOEXEC != 0, created: &l}, false
}

// uncreate removes the file r.created names if it is still the file r.fd
// is open on.
func (r result) uncreate() {
	if r.created == nil {
		return
	}
	var a, b unix.Stat_t
	if unix.Fstat(r.fd, &a) == nil && unix.Fstatat(r.created.dir, r.created.name, &b, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		a.Dev == b.Dev && a.Ino == b.Ino {
		_ = unix.Unlinkat(r.created.dir, r.created.name, 0)
	}
}

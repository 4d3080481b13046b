package broker

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
	"github.com/cordon-run/cordon/mounts/xlock"
)

// A renamed directory carries what lies below it: the broker walks it, so
// nothing in it is a guarded path where it is, nor becomes one where it
// goes.

// maxTreeEntries bounds the walk of a renamed directory; a larger tree is
// refused (fail closed).
const maxTreeEntries = 200000

// checkTree walks the directory at l and refuses when an entry below it is
// guarded at its path now or would be at its path under dst. It locks
// each directory of the tree in h before it reads it (see xlock_linux.go)
// and returns an O_PATH descriptor of the tree's top, which afterMove
// walks again.
func (b *Broker) checkTree(c *call, h *hold, op string, l loc, dst string) (top int, ok bool) {
	c.mayBlock() // a tree of up to maxTreeEntries
	fd, err := unix.Openat(l.dir, l.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	top, err = unix.Openat(fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return -1, false
	}
	c.keep(top)
	root, err := c.rootFD()
	if err != nil {
		unix.Close(fd)
		return -1, false
	}
	w := &treeWalk{b: b, h: h, op: op, root: root, top: l.path}
	return top, w.walk(fd, l.path, dst)
}

// moveTree performs rename(from, to, flags) of a directory (or, with
// RENAME_EXCHANGE, of two, one of which is a directory): a directory
// carries what lies below it, so nothing in it may be a guarded path where
// it is, nor become one where it goes. The directories it moves between
// and the tree are locked against other brokers as it is walked, and the
// tree is walked again once moved (see xlock_linux.go).
func (b *Broker) moveTree(c *call, h *hold, op string, from, to loc, flags uint) result {
	if !h.lock(to.path, from.dir, to.dir) {
		return fail(unix.EBUSY)
	}
	if moved(from) || moved(to) {
		return retry()
	}
	tops := [2]int{-1, -1}
	for i, side := range [2][2]loc{{from, to}, {to, from}} {
		if i == 1 && flags&unix.RENAME_EXCHANGE == 0 || !isDir(side[0]) {
			continue
		}
		top, ok := b.checkTree(c, h, op, side[0], side[1].path)
		if !ok {
			return fail(unix.EACCES)
		}
		tops[i] = top
	}
	if err := unix.Renameat2(from.dir, from.name, to.dir, to.name, flags); err != nil {
		return fail(err)
	}
	if !b.afterMove(c, h, op, from, to, flags, tops) {
		return fail(unix.EACCES)
	}
	return ok(0)
}

// afterMove walks each moved tree (tops: the one moved from from to to,
// and with RENAME_EXCHANGE the one moved back) again where it now is, and
// when it carries a guarded entry (made by a call of another broker that
// took no lock, between the first walk and the move) moves it back.
func (b *Broker) afterMove(c *call, h *hold, op string, from, to loc, flags uint, tops [2]int) bool {
	root, err := c.rootFD()
	ok := err == nil
	for i, p := range [2]string{to.path, from.path} {
		if !ok || tops[i] < 0 {
			continue
		}
		fd, err := unix.Openat(tops[i], ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			ok = false
			break
		}
		w := &treeWalk{b: b, h: h, op: op, root: root, top: p, after: true}
		ok = w.walk(fd, p, p)
	}
	if ok {
		return true
	}
	if err := undoRename(from, to, flags); err != nil {
		b.deny(op, to.path, "protect (a renamed directory that carries a guarded entry could not be moved back: "+err.Error()+")")
	}
	return false
}

// treeWalk is one walk of a renamed directory's tree; a refusal is
// recorded for top, the directory the call named.
type treeWalk struct {
	b    *Broker
	h    *hold
	op   string
	root int
	top  string
	n    int
	// after says the tree was moved already: each entry is decided where
	// it is, .git files included.
	after bool
}

// lockDir locks the directory fd of the tree (held in h until the move is
// done, or past maxHeldDirs only while it is read) and returns the
// release of a lock not held.
func (w *treeWalk) lockDir(fd int) (unlock func(), ok bool) {
	if w.h.locks.Count() < maxHeldDirs {
		return func() {}, w.h.lock(w.top, fd)
	}
	if w.h.held(fd) {
		return func() {}, true
	}
	u, err := xlock.Lock(fd)
	if err != nil {
		w.b.deny(w.op, w.top, Busy)
		return nil, false
	}
	return u, true
}

// walk decides each entry below src (and its twin below dst).
//
// A symlink may not enter a ".git" name or a place below a ".git"
// directory, and a ".git" file's redirect is decided again where it goes
// (a relative gitdir points elsewhere from there).
func (w *treeWalk) walk(fd int, src, dst string) bool {
	b, op, root, top, n := w.b, w.op, w.root, w.top, &w.n
	f := os.NewFile(uintptr(fd), src)
	defer f.Close()
	unlock, locked := w.lockDir(fd)
	if !locked {
		return false
	}
	ents, err := f.ReadDir(-1)
	unlock()
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
		ps := []string{s, d}
		if s == d {
			ps = ps[:1] // the walk after the move, or a rename in place
		}
		for _, p := range ps {
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
		if e.Type().IsRegular() && gitLinkName(d) && (s != d || w.after) {
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
			if err != nil || !w.walk(cfd, s, d) {
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
	unlock, r, locked := b.bareLock(c, op, l)
	if !locked {
		return r, r.again
	}
	defer unlock()
	if !b.bareOK(c, op, l, false) {
		return fail(unix.EACCES), false
	}
	if gitLinkName(l.path) {
		return b.openGitFile(c, op, l, flags, mode, false), false
	}
	r, again, exists := b.makeFile(c, l, flags, mode, true)
	return r, again || exists
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

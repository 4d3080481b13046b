package broker

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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
		if e.Type()&os.ModeSymlink != 0 && gitRedirectPlace(d) {
			b.deny(op, top, gitSymlinkRule+" (which "+d+" would be)")
			return false
		}
		if e.Type().IsRegular() && gitLinkName(d) && s != d {
			data, err := readAt(fd, e.Name(), 4097)
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

//go:build unix

package mounts

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// The file tools descend from an entry's Source one component at a time
// with openat(O_NOFOLLOW), holding each directory's descriptor. The
// resolution they act on has no symbolic link left in it, so meeting one is
// proof that the tree changed after the check: they stop with ErrChanged
// rather than follow it. The Source itself is trusted configuration and is
// opened the way the kernel's bind mount resolves it.

// openRead opens the regular file of r for reading and returns its size.
func openRead(r resolution) (*os.File, int64, error) {
	comps := splitRel(r.rel)
	if len(comps) == 0 {
		if r.e.Origin == OriginMount {
			return openFileMount(r.e)
		}
		return nil, 0, notFile("a directory; use List")
	}
	root, base, err := openEntryRoot(r.e)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close() //nolint:errcheck // read-only descriptor
	dir, err := descend(root, comps[:len(comps)-1])
	if err != nil {
		return nil, 0, err
	}
	if dir != root {
		defer dir.Close() //nolint:errcheck // read-only descriptor
	}
	last := comps[len(comps)-1]
	f, err := openat(dir, last, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, swapped(dir, last, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close() //nolint:errcheck,gosec // already failing
		return nil, 0, err
	}
	switch {
	case fi.IsDir():
		f.Close() //nolint:errcheck,gosec // not used
		return nil, 0, notFile("a directory; use List")
	case !fi.Mode().IsRegular():
		f.Close() //nolint:errcheck,gosec // not used
		return nil, 0, notFile(fi.Mode().Type().String())
	}
	if err := verify(f, base, r.rel); err != nil {
		f.Close() //nolint:errcheck,gosec // not used
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// writeAtomic writes content to r's file by temporary file and rename in the
// same directory, creating missing parent directories. Each name it makes
// is decided first, all of them before any is made (walkWrite without
// acting), so that a refused write leaves nothing behind, and again as it
// makes them, under decide.Lock and the cross-process lock of each
// directory decided on when one may matter to its rules.
func (t *Table) writeAtomic(r resolution, content string) error {
	var locks *decide.Locks
	if writeRelevant(r) {
		locks = decide.Lock()
		defer locks.Release()
		if err := t.walkWrite(r, locks, &content, nil); err != nil {
			return err
		}
	}
	return t.walkWrite(r, locks, &content, replaceFile(content))
}

// replaceFile returns walkWrite's last step: the temporary file, written
// and synced, renamed over name in dir.
func replaceFile(content string) func(dir *os.File, name string) error {
	return func(dir *os.File, name string) error {
		perm, exists, uid, gid, err := targetMode(dir, name)
		if err != nil {
			return err
		}
		createPerm := uint32(0o666) // the umask applies, as for a new file
		if exists {
			createPerm = 0o600
		}
		tmp, err := tempName()
		if err != nil {
			return err
		}
		tf, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, createPerm)
		if err != nil {
			return err
		}
		renamed := false
		defer func() {
			if !renamed {
				_ = ignoringEINTR(func() error { return unix.Unlinkat(int(dir.Fd()), tmp, 0) })
			}
		}()
		if err := fillTemp(tf, content, exists, perm, uid, gid); err != nil {
			return err
		}
		// The rename replaces whatever is at name without following it; a
		// link or directory there now is still a change worth reporting.
		if _, _, _, _, err := targetMode(dir, name); err != nil {
			return err
		}
		if err := ignoringEINTR(func() error { return unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name) }); err != nil {
			return err
		}
		renamed = true
		if err := dir.Sync(); err != nil {
			logrus.WithField("dir", dir.Name()).WithError(err).Debug("fsync of directory after rename failed")
		}
		return nil
	}
}

// fillTemp writes, chmods, chowns and syncs the temporary file, and closes it.
func fillTemp(tf *os.File, content string, exists bool, perm os.FileMode, uid, gid int) error {
	defer tf.Close() //nolint:errcheck // closed explicitly below on success
	if _, err := io.WriteString(tf, content); err != nil {
		return err
	}
	if exists {
		if err := tf.Chmod(perm); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := tf.Chown(uid, gid); err != nil {
				logrus.WithField("file", tf.Name()).WithError(err).Debug("cannot keep the file's owner")
			}
		}
	}
	if err := tf.Sync(); err != nil {
		return err
	}
	return tf.Close()
}

// targetMode looks at name in dir without following it: the permission
// bits, owner and group of an existing regular file, exists false when there
// is none, and an error for a symbolic link (ErrChanged), a directory or
// another kind of file.
func targetMode(dir *os.File, name string) (perm os.FileMode, exists bool, uid, gid int, err error) {
	var st unix.Stat_t
	err = ignoringEINTR(func() error { return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if errors.Is(err, unix.ENOENT) {
		return 0, false, 0, 0, nil
	}
	if err != nil {
		return 0, false, 0, 0, err
	}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		return os.FileMode(uint32(st.Mode) & 0o777), true, int(st.Uid), int(st.Gid), nil
	case unix.S_IFLNK:
		return 0, false, 0, 0, &changedError{fmt.Errorf("a symbolic link appeared at %s", filepath.Join(dir.Name(), name))}
	case unix.S_IFDIR:
		return 0, false, 0, 0, notFile("a directory")
	}
	return 0, false, 0, 0, notFile("a special file")
}

// listWalk lists the directory r under the sandbox namespace into l.
func (t *Table) listWalk(l *lister, r resolution) error {
	root, _, err := openEntryRoot(r.e)
	if err != nil {
		return err
	}
	defer root.Close() //nolint:errcheck // read-only descriptor
	dir, err := descend(root, splitRel(r.rel))
	if err != nil {
		return err
	}
	if dir != root {
		defer dir.Close() //nolint:errcheck // read-only descriptor
	}
	return t.listDir(l, dir, r.sandbox, r.e, nil)
}

// listDir visits the entries of the sandbox directory sp, held as dir (nil
// for a scaffold directory) in entry e, whose path relative to the listed
// directory is rel.
func (t *Table) listDir(l *lister, dir *os.File, sp string, e *Entry, rel []string) error {
	var names []string
	if dir != nil {
		var err error
		if names, err = dir.Readdirnames(-1); err != nil {
			return err
		}
	}
	for _, m := range t.childMounts(sp) {
		names = appendUnique(names, m)
	}
	sort.Strings(names)
	for _, name := range names {
		child := join(sp, name)
		crel := append(rel[:len(rel):len(rel)], name)
		kind, ce := t.classifyChild(child, e)
		switch kind {
		case childHost:
			var st unix.Stat_t
			var err error = unix.ENOENT
			if dir != nil {
				err = ignoringEINTR(func() error {
					return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
				})
			}
			if err != nil {
				if !t.isScaffold(child) {
					continue // gone since readdir
				}
				// The way to a mount point that the host does not
				// have (yet): the sandbox shows it as a directory.
				down, err := l.visit(child, crel)
				if err == nil && down {
					err = t.listDir(l, nil, child, e, crel)
				}
				if err != nil {
					return err
				}
				continue
			}
			down, err := l.visit(child, crel)
			if err != nil {
				return err
			}
			if !down || uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
				continue // symbolic links are listed, never followed
			}
			sub, err := openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err != nil {
				continue
			}
			err = t.listDir(l, sub, child, e, crel)
			sub.Close() //nolint:errcheck,gosec // read-only descriptor
			if err != nil {
				return err
			}
		case childMount:
			down, err := l.visit(child, crel)
			if err != nil {
				return err
			}
			if !down {
				continue
			}
			sub, _, err := openEntryRoot(ce)
			if err != nil {
				continue
			}
			err = t.listDir(l, sub, child, ce, crel)
			sub.Close() //nolint:errcheck,gosec // read-only descriptor
			if err != nil {
				return err
			}
		case childScaffold:
			down, err := l.visit(child, crel)
			if err != nil {
				return err
			}
			if down {
				if err := t.listDir(l, nil, child, nil, crel); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// openEntryRoot opens e.Source as a directory and returns the path the
// system reports for it (for verify; "" where it cannot tell).
func openEntryRoot(e *Entry) (*os.File, string, error) {
	f, err := os.OpenFile(e.Source, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", err
	}
	base, err := fdPath(f)
	if err != nil {
		f.Close() //nolint:errcheck,gosec // already failing
		return nil, "", err
	}
	return f, base, nil
}

// openFileMount opens the source of a mount whose target is read itself: a
// file mounted on its own, as attachments are. The source is configuration
// (checked by CheckSources), opened without following a symbolic link
// swapped in since; a directory is refused as for any other mount root.
func openFileMount(e *Entry) (*os.File, int64, error) {
	f, err := os.OpenFile(e.Source, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = notFile("a directory; use List")
	case !fi.Mode().IsRegular():
		err = notFile(fi.Mode().Type().String())
	default:
		return f, fi.Size(), nil
	}
	f.Close() //nolint:errcheck,gosec // not used
	return nil, 0, err
}

// descend opens each of comps below root in turn without following
// symbolic links. The returned directory is root itself when comps is
// empty; the caller closes it otherwise.
func descend(root *os.File, comps []string) (*os.File, error) {
	dir := root
	closeDir := func() {
		if dir != root {
			dir.Close() //nolint:errcheck,gosec // directory descriptor
		}
	}
	for _, c := range comps {
		sub, err := openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			err = swapped(dir, c, err)
			closeDir()
			return nil, err
		}
		closeDir()
		dir = sub
	}
	return dir, nil
}

// swapped turns the error of opening name in dir with O_NOFOLLOW into a
// changedError when name is now a symbolic link.
func swapped(dir *os.File, name string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.EMLINK) {
		return err
	}
	var st unix.Stat_t
	if ignoringEINTR(func() error { return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) }) == nil &&
		uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK {
		return &changedError{fmt.Errorf("%s is now a symbolic link", filepath.Join(dir.Name(), name))}
	}
	return err
}

// verify checks, where the system can tell, that f really is base/rel: a
// directory on the way was not moved while it was held.
func verify(f *os.File, base, rel string) error {
	if base == "" {
		return nil
	}
	want := base
	if rel != "" {
		want = filepath.Join(base, rel)
	}
	got, err := fdPath(f)
	if err != nil {
		return err
	}
	if got != want {
		return &changedError{fmt.Errorf("opened %s, expected %s", got, want)}
	}
	return nil
}

func openat(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Openat(int(dir.Fd()), name, flags|unix.O_CLOEXEC, perm)
		return err
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func tempName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return ".cordon-" + hex.EncodeToString(b[:]) + ".tmp", nil
}

func splitRel(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}
